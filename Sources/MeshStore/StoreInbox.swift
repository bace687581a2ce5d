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
/// - **Large payloads in files.** A payload of ``StoreConfiguration/inboxFileThreshold``
///   bytes or more (64 KiB) is written to a file of its own in the payload directory
///   beside the store (`<store>-payloads/inbox-…`), synced with the directory, before
///   the row naming it is committed; SQLite would write it twice through its WAL. The
///   custody rule is unchanged: a crash after the file but before the row leaves an
///   orphan file (removed at the next open) and no dedup entry, so the sender's retry
///   is stored once; a file is removed only after the commit that deleted its row.
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

    /// Takes custody of a message and queues its delivery receipt in one transaction
    /// (one commit) when `queue` is this store's outbox; in two steps otherwise.
    /// - Throws: ``MeshError`` when the store cannot write them (neither is kept, the
    ///   router does not acknowledge the hop), or what `queue` threw.
    public func accept(
        _ message: InboundMessage,
        queueing receipt: OutboundMessage,
        in queue: any OutboundQueue
    ) async throws {
        try await append(message, queueing: receipt, in: queue)
    }

    /// ``accept(_:queueing:in:)``, returning the new entry, or nil when the message
    /// was a duplicate.
    @discardableResult
    public func append(
        _ message: InboundMessage,
        queueing receipt: OutboundMessage,
        in queue: any OutboundQueue
    ) async throws -> Entry? {
        guard let outbox = queue as? StoreOutbox, outbox.database.pool === database.pool,
            receipt.payload.count < database.configuration.outboxFileThreshold
        else {
            let entry = try await append(message)
            try await queue.enqueueReceipt(receipt)
            return entry
        }
        return try await append(message, at: nil, receipt: receipt)
    }

    /// Stores a message unless its ID is already known, then enforces the bounds.
    /// - Parameters:
    ///   - message: the message.
    ///   - date: when it was received; nil for the store's clock.
    /// - Returns: the new entry, or nil when the message was a duplicate (nothing changed).
    /// - Throws: ``MeshError`` when the store cannot write it.
    @discardableResult
    public func append(_ message: InboundMessage, at date: Date? = nil) async throws(MeshError) -> Entry? {
        try await append(message, at: date, receipt: nil)
    }

    /// ``append(_:at:)``, queueing `receipt` in the outbox in the same transaction
    /// (whether or not the message was a duplicate).
    func append(_ message: InboundMessage, at date: Date?, receipt: OutboundMessage?) async throws(MeshError) -> Entry?
    {
        let configuration = database.configuration
        let receivedAt = date.map(Millis.from) ?? database.nowMillis
        let files = database.payloadFiles
        var payloadFile: String?
        if message.payload.count >= configuration.inboxFileThreshold {
            // A copy already stored (the sender's retry after a lost acknowledgement)
            // costs no file.
            if try await isKnown(message.id, from: message.from) {
                // Its receipt still goes back (unless it waits already).
                let outbox = StoreOutbox(database: database)
                if let receipt, await outbox.record(receipt.id).map({ $0.status.isFinal }) ?? true {
                    try await outbox.enqueue(receipt)
                }
                return nil
            }
            try files.prepare()
            payloadFile = try await files.write(message.payload, for: message.id, prefix: Self.filePrefix)
            // A crash here leaves the file and no row: no entry, no dedup record.
            try database.faults.crash(at: .inboxFileWritten)
        }
        let file = payloadFile
        let faults = database.faults
        let (entry, removed): (Entry?, [String])
        do {
            (entry, removed) = try await database.write("store message \(message.id.hex) in the inbox") {
                db -> (Entry?, [String]) in
                try faults.crash(at: .inboxWrite)
                if let receipt {
                    try StoreOutbox.insertReceipt(db, receipt, now: receivedAt, configuration: configuration)
                }
                guard try DedupLog.insert(db, message.id, from: message.from, at: receivedAt) else { return (nil, []) }
                var row = InboxRow(
                    messageID: message.id.hex,
                    sender: message.from.hex,
                    transport: message.transport,
                    receivedAt: receivedAt,
                    bytes: message.payload.count,
                    payload: file == nil ? Data(message.payload) : Data(),
                    topic: message.topic,
                    emergency: message.emergency ? 1 : 0,
                    payloadFile: file,
                    sentAt: message.sentMillis.flatMap { Int64(exactly: $0) }
                )
                try row.insertRowOrIgnore(db)
                guard db.changesCount == 1, let sequence = row.sequence else { return (nil, []) }
                var history = HistoryRow(
                    messageID: message.id.hex,
                    direction: MessageDirection.inbound.name,
                    peer: message.from.hex,
                    bytes: message.payload.count,
                    status: MessageStatus.received.name,
                    transport: message.transport,
                    createdAt: receivedAt,
                    attempts: 0
                )
                history.keep(payload: message.payload, bytes: message.payload.count)
                if message.topic != nil { history.flags = MessageHistory.topicFlag }
                try history.insertRow(db, orIgnore: true)
                if let historyID = history.id, db.changesCount == 1 {
                    try MessageHistory.record(
                        db,
                        historyID: historyID,
                        at: receivedAt,
                        kind: .received,
                        status: .received,
                        transport: message.transport
                    )
                }
                let removed = try Self.enforceBounds(db, configuration: configuration, keeping: sequence)
                return (Entry(sequence: Int(sequence), receivedAt: Millis.date(receivedAt), message: message), removed)
            }
        } catch {
            if let file { files.remove([file]) }
            throw error
        }
        // A duplicate's file is nobody's; dropped messages' files go after the commit.
        files.remove(removed + (entry == nil ? [file].compactMap { $0 } : []))
        return entry
    }

    /// Drops messages by the per-sender rule until both bounds hold; returns the payload
    /// files of the dropped ones (to remove once the transaction is committed).
    static func enforceBounds(
        _ db: Database,
        configuration: StoreConfiguration,
        keeping newest: Int64
    ) throws -> [String] {
        var removed: [String] = []
        while true {
            // Cached: every message received runs it.
            guard
                let (messages, bytes) = try db.cachedStatement(
                    sql: "SELECT COALESCE(SUM(messages), 0), COALESCE(SUM(bytes), 0) FROM inboxShare"
                ).firstRow([], { row -> (Int, Int) in (row[0], row[1]) })
            else { return removed }
            let order: String
            if messages > configuration.inboxCapacity {
                order = "messages DESC"
            } else if bytes > configuration.inboxMaxBytes {
                order = "bytes DESC"
            } else {
                return removed
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
                arguments: [newest]
            )
            guard let victim else { return removed }
            removed += try Self.deleteRows(db, where: "sequence = ?", victim)
        }
    }

    /// Messages with a sequence number above `after`, oldest first, at most `limit`
    /// (the newest ones when there are more) — like the node's in-memory `Inbox`.
    /// - Throws: ``MeshError`` when the store cannot be read.
    /// - Parameter unread: only messages not yet marked read (``MessageHistory/markRead(_:peer:)``).
    public func entries(after: Int = 0, limit: Int = .max, unread: Bool = false) async throws(MeshError) -> [Entry] {
        let limit = max(0, limit)
        let rows = try await database.read("read the inbox") { db in
            try InboxRow.fetchAll(
                db,
                sql:
                    "SELECT * FROM inbox WHERE sequence > ? \(Self.unreadCondition(unread)) ORDER BY sequence DESC LIMIT ?",
                arguments: [after, limit == .max ? -1 : limit]
            )
        }
        var entries: [Entry] = []
        for row in rows.reversed() {
            if let entry = try await entry(row) { entries.append(entry) }
        }
        return entries
    }

    /// The entry with sequence number `sequence`, or nil when the inbox holds none.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func entry(sequence: Int) async throws(MeshError) -> Entry? {
        guard sequence >= 1 else { return nil }
        return try await entryRow(sequence)
    }

    private func entryRow(_ sequence: Int) async throws(MeshError) -> Entry? {
        let row = try await database.read("read inbox entry \(sequence)") { db in
            try InboxRow.fetchOne(db, sql: "SELECT * FROM inbox WHERE sequence = ?", arguments: [sequence])
        }
        guard let row else { return nil }
        return try await entry(row)
    }

    /// The sequence number of the entry holding message `id` (from any sender; the
    /// lowest when several senders used the ID), or nil when the inbox holds none.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func sequence(of id: MessageID) async throws(MeshError) -> Int? {
        try await database.read("find message \(id.hex) in the inbox") { db in
            try Int.fetchOne(
                db,
                sql: "SELECT MIN(sequence) FROM inbox WHERE messageID = ?",
                arguments: [id.hex]
            )
        }
    }

    /// Deletes the entries with a sequence number up to `sequence` (the reader has
    /// consumed them). Their IDs stay in the dedup log. Returns how many were deleted.
    /// - Throws: ``MeshError`` when the store cannot write.
    @discardableResult
    public func remove(through sequence: Int) async throws(MeshError) -> Int {
        let (count, removed) = try await database.write("remove inbox entries up to \(sequence)") { db in
            let removed = try Self.deleteRows(db, where: "sequence <= ?", Int64(sequence))
            return (db.changesCount, removed)
        }
        // A crash here leaves files no row names: removed at the next open.
        try database.faults.crash(at: .inboxRowsDeleted)
        database.payloadFiles.remove(removed)
        return count
    }

    /// The SQL condition (after `AND`) that keeps only unread entries; empty for all.
    static func unreadCondition(_ unread: Bool) -> String {
        guard unread else { return "" }
        return "AND EXISTS (SELECT 1 FROM history WHERE history.messageID = inbox.messageID"
            + " AND history.direction = 'inbound' AND history.peer = inbox.sender AND history.readAt IS NULL)"
    }

    /// Deletes the entry with sequence number `sequence` (its ID stays in the dedup
    /// log, its history entry stays, marked read: the user has dealt with it). Returns
    /// whether the inbox held it.
    /// - Throws: ``MeshError`` when the store cannot write.
    @discardableResult
    public func delete(sequence: Int) async throws(MeshError) -> Bool {
        let now = database.nowMillis
        let (count, removed) = try await database.write("delete inbox entry \(sequence)") { db in
            try db.execute(
                sql: """
                    UPDATE history SET readAt = ? WHERE direction = 'inbound' AND readAt IS NULL
                    AND (messageID, peer) IN (SELECT messageID, sender FROM inbox WHERE sequence = ?)
                    """,
                arguments: [now, sequence]
            )
            let removed = try Self.deleteRows(db, where: "sequence = ?", Int64(sequence))
            return (db.changesCount, removed)
        }
        database.payloadFiles.remove(removed)
        return count > 0
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
