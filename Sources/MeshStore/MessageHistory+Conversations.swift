import Foundation
import GRDB
import MeshCore

/// One peer's conversation in the list of conversations.
public struct ConversationSummary: Sendable, Hashable, Codable {
    /// The peer.
    public var peer: PeerID
    /// Messages both ways that the history keeps.
    public var messages: Int
    /// Received messages not yet read.
    public var unread: Int
    /// When the newest message was sent or received.
    public var lastAt: Date
}

/// Conversations, unread state, clearing and retention: the history as a messenger
/// reads it. A conversation holds this node's own messages to a peer and the peer's
/// messages to it; relayed messages and receipts are not part of it.
extension MessageHistory {
    /// The `flags` bit of an inbound entry that arrived on a topic: a message to
    /// everyone subscribed, unread like any other but part of no conversation. (A
    /// store-only bit, above the DATA frame's flags that outbound entries keep.)
    static let topicFlag = 0x1_0000

    /// Rows that belong to a conversation (this node's own messages, no receipts, no
    /// topic messages).
    static let conversational = "flags & 2 = 0 AND flags & \(topicFlag) = 0 AND origin IS NULL"

    /// The newest `limit` messages both ways with `peer`, oldest first.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func conversation(with peer: PeerID, limit: Int = 100) async throws(MeshError) -> [HistoryEntry] {
        let limit = max(0, limit)
        return try await database.read("read the conversation with \(peer.hex)") { db in
            try HistoryRow.fetchAll(
                db,
                sql: "SELECT * FROM history WHERE peer = ? AND \(Self.conversational) ORDER BY id DESC LIMIT ?",
                arguments: [peer.hex, limit]
            ).reversed().map(HistoryEntry.init)
        }
    }

    /// Every peer with a message both ways in the history, the most recent first.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func conversations() async throws(MeshError) -> [ConversationSummary] {
        try await database.read("list the conversations") { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT peer, COUNT(*) AS messages, MAX(createdAt) AS lastAt,
                    SUM(direction = 'inbound' AND readAt IS NULL) AS unread
                    FROM history WHERE \(Self.conversational) GROUP BY peer ORDER BY MAX(id) DESC
                    """
            ).map { row in
                ConversationSummary(
                    peer: try PeerID.stored(row["peer"]),
                    messages: row["messages"],
                    unread: row["unread"],
                    lastAt: Millis.date(row["lastAt"] as Int64)
                )
            }
        }
    }

    /// The distinct peers in the history whose ID starts with `prefix` (lower-case
    /// hex), at most `limit`: how a command names a peer only the history knows (a
    /// stranger who wrote). A prefix that is not hex matches nothing.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func peers(startingWith prefix: String, limit: Int = 6) async throws(MeshError) -> [PeerID] {
        let prefix = prefix.lowercased()
        guard !prefix.isEmpty, prefix.allSatisfy(\.isHexDigit) else { return [] }
        return try await database.read("find the peers whose ID starts with \(prefix)") { db in
            try String.fetchAll(
                db,
                sql: "SELECT DISTINCT peer FROM history WHERE peer >= ? AND peer < ? ORDER BY peer LIMIT ?",
                arguments: [prefix, prefix + "g", max(0, limit)]
            ).compactMap { PeerID(hex: $0) }
        }
    }

    /// Received messages not yet read, from one peer or all.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func unreadCount(peer: PeerID? = nil) async throws(MeshError) -> Int {
        try await database.read("count the unread messages") { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM history WHERE direction = 'inbound' AND readAt IS NULL
                    AND (?1 IS NULL OR peer = ?1)
                    """,
                arguments: [peer?.hex]
            ) ?? 0
        }
    }

    /// The IDs of every received message not yet read.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func unreadIDs() async throws(MeshError) -> Set<MessageID> {
        try await database.read("list the unread messages") { db in
            Set(
                try String.fetchAll(
                    db,
                    sql: "SELECT messageID FROM history WHERE direction = 'inbound' AND readAt IS NULL"
                ).compactMap { MessageID(hex: $0) }
            )
        }
    }

    /// Marks received messages read: those with the IDs given, or (with `ids` nil) all
    /// of them, from `peer` or from anyone. Returns how many were unread.
    /// - Throws: ``MeshError`` when the store cannot be written.
    @discardableResult
    public func markRead(_ ids: [MessageID]? = nil, peer: PeerID? = nil) async throws(MeshError) -> Int {
        try await markReadListing(ids, peer: peer).count
    }

    /// ``markRead(_:peer:)``, also returning the direct messages (not topic messages)
    /// it marked, by sender: what read receipts go back for.
    /// - Throws: ``MeshError`` when the store cannot be written.
    public func markReadListing(
        _ ids: [MessageID]? = nil,
        peer: PeerID? = nil
    ) async throws(MeshError) -> (count: Int, bySender: [PeerID: [MessageID]]) {
        let now = database.nowMillis
        let unread = "direction = 'inbound' AND readAt IS NULL"
        return try await database.write("mark messages read") { db in
            var bySender: [PeerID: [MessageID]] = [:]
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT messageID, peer, flags FROM history WHERE \(unread) AND (?1 IS NULL OR peer = ?1)",
                arguments: [peer?.hex]
            )
            let wanted = ids.map { Set($0.map(\.hex)) }
            for row in rows {
                let id: String = row["messageID"]
                guard wanted?.contains(id) ?? true, ((row["flags"] as Int?) ?? 0) & Self.topicFlag == 0 else {
                    continue
                }
                bySender[try PeerID.stored(row["peer"]), default: []].append(try MessageID.stored(id))
            }
            let count = try Self.markReadRows(db, ids: ids, peer: peer, now: now)
            return (count, bySender)
        }
    }

    /// Records the read receipt `peer` sent for `ids`: only this node's messages to
    /// that peer change. Returns how many did.
    /// - Throws: ``MeshError`` when the store cannot be written.
    @discardableResult
    public func recordReadReceipt(from peer: PeerID, ids: [MessageID]) async throws(MeshError) -> Int {
        let now = database.nowMillis
        return try await database.write("record a read receipt") { db in
            var changed = 0
            for id in ids {
                try db.execute(
                    sql: """
                        UPDATE history SET readAt = ? WHERE direction = 'outbound' AND peer = ? AND messageID = ?
                            AND readAt IS NULL
                        """,
                    arguments: [now, peer.hex, id.hex]
                )
                changed += db.changesCount
            }
            return changed
        }
    }

    private static func markReadRows(_ db: Database, ids: [MessageID]?, peer: PeerID?, now: Int64) throws -> Int {
        let base = "UPDATE history SET readAt = ? WHERE direction = 'inbound' AND readAt IS NULL"
        guard let ids else {
            try db.execute(
                sql: base + " AND (?2 IS NULL OR peer = ?2)",
                arguments: [now, peer?.hex]
            )
            return db.changesCount
        }
        var changed = 0
        for id in ids {
            try db.execute(sql: base + " AND messageID = ?", arguments: [now, id.hex])
            changed += db.changesCount
        }
        return changed
    }

    /// Deletes the history of one peer, or all of it (traces and the receipts this
    /// node returned included); entries of messages still on their way are kept.
    /// Returns how many messages were deleted (receipts not counted).
    /// - Throws: ``MeshError`` when the store cannot be written.
    @discardableResult
    public func clear(peer: PeerID? = nil) async throws(MeshError) -> Int {
        try await database.write("clear the message history") { db in
            let condition = "(?1 IS NULL OR peer = ?1) AND \(Self.finished)"
            let messages =
                try Int.fetchOne(
                    db,
                    sql: "SELECT COUNT(*) FROM history WHERE flags & 2 = 0 AND \(condition)",
                    arguments: [peer?.hex]
                ) ?? 0
            try db.execute(sql: "DELETE FROM history WHERE \(condition)", arguments: [peer?.hex])
            return messages
        }
    }

    /// Keeps the text (or head) of this node's outbound message `id` from its
    /// plaintext `payload`, when its entry has none: a message sealed before it was
    /// queued reaches the store as ciphertext. Returns whether the entry changed.
    /// - Throws: ``MeshError`` when the store cannot be read or written.
    @discardableResult
    public func keepText(of id: MessageID, payload: [UInt8]) async throws(MeshError) -> Bool {
        let needed = try await database.read("read the history of message \(id.hex)") { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT text IS NULL AND head IS NULL FROM history
                    WHERE messageID = ? AND direction = 'outbound' AND origin IS NULL AND flags & 2 = 0
                    """,
                arguments: [id.hex]
            )
        }
        guard needed == true, !payload.isEmpty else { return false }
        var row = HistoryRow(messageID: "", direction: "", peer: "", bytes: 0, status: "", createdAt: 0, attempts: 0)
        row.keep(payload: payload, bytes: payload.count)
        let (text, head) = (row.text, row.head)
        return try await database.write("keep the text of message \(id.hex)") { db in
            try db.execute(
                sql: """
                    UPDATE history SET text = ?, head = ? WHERE messageID = ? AND direction = 'outbound'
                    AND text IS NULL AND head IS NULL
                    """,
                arguments: [text, head, id.hex]
            )
            return db.changesCount > 0
        }
    }

    /// Entries that may be deleted: not queued or sent, not in the outbox.
    static let finished = "status NOT IN ('queued', 'sent') AND id NOT IN (SELECT historyID FROM outbox)"

    /// Deletes the finished entries created before `cutoff` (milliseconds since 1970).
    static func prune(_ db: Database, before cutoff: Int64) throws -> Int {
        try db.execute(sql: "DELETE FROM history WHERE createdAt < ? AND \(finished)", arguments: [cutoff])
        return db.changesCount
    }
}
