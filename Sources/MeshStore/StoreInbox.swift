import Foundation
import GRDB
import MeshCore

/// The node's persisted inbox: the messages that arrived for it, in one SQLite file,
/// surviving restarts. It is the router's ``MessageSink``.
///
/// - **Custody.** ``accept(_:)`` commits the message (one transaction, `synchronous =
///   FULL`) before it returns, and the router acknowledges the hop only after that.
/// - **Exactly once.** Accepting a message whose ID the store already knows (see
///   ``DedupLog``) is a successful no-op. If the node is killed between the commit and
///   the hop acknowledgement, the sender retries, the copy is recognised, and the
///   retry is acknowledged without a second entry.
/// - **Sequence numbers** start at 1 and only grow, across restarts; a number is never
///   reused, even after its message was dropped (SQLite `AUTOINCREMENT`).
/// - **Per-sender share.** The inbox keeps at most
///   ``StoreConfiguration/inboxCapacity`` messages and
///   ``StoreConfiguration/inboxMaxBytes`` payload bytes. Over the message bound, the
///   oldest message of the sender holding the *most messages* is dropped; over the
///   byte bound, the oldest message of the sender holding the *most bytes*; repeated
///   until both bounds hold (ties: the sender whose oldest message is oldest). So one
///   sender flooding the inbox pushes out its own messages, not everyone else's. The
///   message just accepted is never the one dropped (a single message larger than the
///   byte bound is kept alone). A dropped message stays in the dedup log: a late copy of
///   it is not delivered again.
public struct StoreInbox: MessageSink {
    /// One received message with its place in the inbox.
    public struct Entry: Sendable, Hashable {
        /// Increasing number, starting at 1, never reused (also across restarts).
        public var sequence: Int
        /// When the node received it.
        public var receivedAt: Date
        /// The message.
        public var message: InboundMessage
    }

    let database: StoreDatabase

    /// Takes custody of a message from the router: returns once it is committed to the
    /// file (or was already there).
    /// - Throws: ``MeshError`` when the store cannot write it; the router then does not
    ///   acknowledge the hop and the sender retries.
    public func accept(_ message: InboundMessage) async throws(MeshError) {
        try await append(message)
    }

    /// Stores a message unless its ID is already known, then enforces the bounds.
    /// - Parameters:
    ///   - message: the message.
    ///   - date: when it was received; nil for the store's clock.
    /// - Returns: the new entry, or nil when the message was a duplicate (nothing changed).
    /// - Throws: ``MeshError`` when the store cannot write it.
    @discardableResult
    public func append(_ message: InboundMessage, at date: Date? = nil) async throws(MeshError) -> Entry? {
        let configuration = database.configuration
        let receivedAt = date.map(Millis.from) ?? database.nowMillis
        return try await database.write("store message \(message.id.hex) in the inbox") { db in
            guard try DedupLog.insert(db, message.id, at: receivedAt) else { return nil }
            var row = InboxRow(
                messageID: message.id.hex, sender: message.from.hex, transport: message.transport,
                receivedAt: receivedAt, bytes: message.payload.count, payload: Data(message.payload),
                topic: message.topic, emergency: message.emergency ? 1 : 0)
            try row.insert(db, onConflict: .ignore)
            guard db.changesCount == 1, let sequence = row.sequence else { return nil }
            var history = HistoryRow(
                messageID: message.id.hex, direction: MessageDirection.inbound.name, peer: message.from.hex,
                bytes: message.payload.count, status: MessageStatus.received.name, transport: message.transport,
                createdAt: receivedAt, attempts: 0)
            try history.insert(db, onConflict: .ignore)
            if let historyID = history.id, db.changesCount == 1 {
                try MessageHistory.record(
                    db, historyID: historyID, at: receivedAt, kind: .received, status: .received,
                    transport: message.transport)
            }
            try Self.enforceBounds(db, configuration: configuration, keeping: sequence)
            return Entry(sequence: Int(sequence), receivedAt: Millis.date(receivedAt), message: message)
        }
    }

    /// Drops messages by the per-sender rule until both bounds hold.
    static func enforceBounds(_ db: Database, configuration: StoreConfiguration, keeping newest: Int64) throws {
        while true {
            guard let totals = try Row.fetchOne(
                db, sql: "SELECT COALESCE(SUM(messages), 0) AS messages, COALESCE(SUM(bytes), 0) AS bytes FROM inboxShare")
            else { return }
            let messages: Int = totals["messages"]
            let bytes: Int = totals["bytes"]
            let order: String
            if messages > configuration.inboxCapacity {
                order = "messages DESC"
            } else if bytes > configuration.inboxMaxBytes {
                order = "bytes DESC"
            } else {
                return
            }
            // The heaviest sender (ties: the one whose oldest message is oldest), and its
            // oldest message other than the one just accepted.
            let victim = try Int64.fetchOne(
                db,
                sql: """
                    SELECT (SELECT sequence FROM inbox WHERE inbox.sender = inboxShare.sender AND sequence != ?1
                            ORDER BY sequence LIMIT 1) AS oldest
                    FROM inboxShare WHERE oldest IS NOT NULL
                    ORDER BY \(order), oldest LIMIT 1
                    """,
                arguments: [newest])
            guard let victim else { return }
            try db.execute(sql: "DELETE FROM inbox WHERE sequence = ?", arguments: [victim])
        }
    }

    /// Messages with a sequence number above `after`, oldest first, at most `limit`
    /// (the newest ones when there are more) — like the node's in-memory `Inbox`.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func entries(after: Int = 0, limit: Int = .max) async throws(MeshError) -> [Entry] {
        let limit = max(0, limit)
        return try await database.read("read the inbox") { db in
            let rows = try InboxRow.fetchAll(
                db, sql: "SELECT * FROM inbox WHERE sequence > ? ORDER BY sequence DESC LIMIT ?",
                arguments: [after, limit == .max ? -1 : limit])
            return try rows.reversed().map { row in
                Entry(
                    sequence: Int(row.sequence ?? 0), receivedAt: Millis.date(row.receivedAt),
                    message: InboundMessage(
                        id: try MessageID.stored(row.messageID), from: try PeerID.stored(row.sender),
                        payload: Array(row.payload), transport: row.transport, topic: row.topic,
                        emergency: row.emergency != 0))
            }
        }
    }

    /// The entry with sequence number `sequence`, or nil when the inbox holds none.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func entry(sequence: Int) async throws(MeshError) -> Entry? {
        guard sequence >= 1 else { return nil }
        return try await entryRow(sequence)
    }

    private func entryRow(_ sequence: Int) async throws(MeshError) -> Entry? {
        try await database.read("read inbox entry \(sequence)") { db in
            guard let row = try InboxRow.fetchOne(db, sql: "SELECT * FROM inbox WHERE sequence = ?", arguments: [sequence]) else {
                return nil
            }
            return Entry(
                sequence: Int(row.sequence ?? 0), receivedAt: Millis.date(row.receivedAt),
                message: InboundMessage(
                    id: try MessageID.stored(row.messageID), from: try PeerID.stored(row.sender),
                    payload: Array(row.payload), transport: row.transport))
        }
    }

    /// Deletes the entries with a sequence number up to `sequence` (the reader has
    /// consumed them). Their IDs stay in the dedup log. Returns how many were deleted.
    /// - Throws: ``MeshError`` when the store cannot write.
    @discardableResult
    public func remove(through sequence: Int) async throws(MeshError) -> Int {
        try await database.write("remove inbox entries up to \(sequence)") { db in
            try db.execute(sql: "DELETE FROM inbox WHERE sequence <= ?", arguments: [sequence])
            return db.changesCount
        }
    }

    /// Messages held now.
    public var count: Int {
        get async throws(MeshError) {
            try await database.read("count the inbox") { db in
                try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(messages), 0) FROM inboxShare") ?? 0
            }
        }
    }

    /// Payload bytes held now.
    public var byteCount: Int {
        get async throws(MeshError) {
            try await database.read("count the inbox bytes") { db in
                try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(bytes), 0) FROM inboxShare") ?? 0
            }
        }
    }

    /// Messages received since the store was created, dropped ones included: the
    /// highest sequence number ever given.
    public var totalReceived: Int {
        get async throws(MeshError) {
            try await database.read("count the messages received") { db in
                try Int.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'inbox'") ?? 0
            }
        }
    }

    /// What one sender holds in the inbox.
    public struct Share: Sendable, Hashable {
        /// Its messages held now.
        public var messages: Int
        /// Their payload bytes.
        public var bytes: Int
    }

    /// Messages held now per sender: the shares the bounds act on.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func shares() async throws(MeshError) -> [PeerID: Share] {
        try await database.read("read the inbox shares") { db in
            var shares: [PeerID: Share] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT sender, messages, bytes FROM inboxShare") {
                shares[try PeerID.stored(row["sender"])] = Share(messages: row["messages"], bytes: row["bytes"])
            }
            return shares
        }
    }
}
