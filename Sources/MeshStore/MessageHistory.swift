import Foundation
import GRDB
import MeshCore

/// Which way a message went, relative to this node. Extensible (a relay direction may
/// come): encoded as its name.
public struct MessageDirection: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The direction's stable name.
    public let name: String
    /// Creates a direction.
    public init(_ name: String) { self.name = name }
    /// The name.
    public var description: String { name }

    /// Sent by this node.
    public static let outbound = MessageDirection("outbound")
    /// Received by this node.
    public static let inbound = MessageDirection("inbound")

    /// Decodes the name.
    public init(from decoder: any Decoder) throws {
        name = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}

extension MessageStatus {
    /// An inbound message: this node received it (the inbox took it).
    public static let received = MessageStatus("received")
}

/// What the store remembers of one message: its last status and when each step happened.
public struct HistoryEntry: Sendable, Hashable, Codable {
    /// The message's ID (`message_id` in JSON).
    public var id: MessageID
    /// Sent or received.
    public var direction: MessageDirection
    /// The destination of an outbound message, the sender of an inbound one.
    public var peer: PeerID
    /// Payload size on the wire.
    public var bytes: Int
    /// Where it is now.
    public var status: MessageStatus
    /// The transport of the last hop that took it (or brought it).
    public var transport: String?
    /// Why it failed or expired, when it did (the last reason recorded).
    public var reason: String?
    /// When it was enqueued (outbound) or received (inbound).
    public var createdAt: Date
    /// When the next hop first took it (status sent or delivered).
    public var sentAt: Date?
    /// When it was delivered.
    public var deliveredAt: Date?
    /// When it failed or expired.
    public var failedAt: Date?
    /// When it expires if not delivered (outbound only).
    public var expiresAt: Date?
    /// How many times it was taken for sending.
    public var attempts: Int
    /// The payload as text, when it is UTF-8 and under 64 KiB (not kept for messages
    /// relayed for others).
    public var text: String?
    /// When ``text`` is nil: the base64 of the payload's first 1 KiB.
    public var headBase64: String?
    /// Inbound: when it was marked read, nil while unread. Outbound: when the
    /// destination's read receipt arrived (``status`` then reads `read`).
    public var readAt: Date?
    /// Inbound only: true while it is unread; nil otherwise.
    public var unread: Bool?

    enum CodingKeys: String, CodingKey {
        case id = "messageID"
        case direction, peer, bytes, status, transport, reason, createdAt, sentAt, deliveredAt, failedAt, expiresAt
        case attempts, text, headBase64, readAt, unread
    }

    init(_ row: HistoryRow) throws {
        id = try MessageID.stored(row.messageID)
        direction = MessageDirection(row.direction)
        peer = try PeerID.stored(row.peer)
        bytes = row.bytes
        status = MessageStatus(row.status)
        transport = row.transport
        reason = row.reason
        createdAt = Millis.date(row.createdAt)
        sentAt = Millis.date(row.sentAt)
        deliveredAt = Millis.date(row.deliveredAt)
        failedAt = Millis.date(row.finishedAt)
        expiresAt = Millis.date(row.expiresAt)
        attempts = row.attempts
        text = row.text
        headBase64 = row.head?.base64EncodedString()
        readAt = Millis.date(row.readAt)
        if row.direction == MessageDirection.outbound.name, readAt != nil, status == .delivered { status = .read }
        unread = row.direction == MessageDirection.inbound.name && row.readAt == nil ? true : nil
    }
}

/// One event in a message's life. A `Codable` struct with a kind (not an enum), so new
/// kinds do not break readers.
public struct TraceEvent: Sendable, Hashable, Codable {
    /// What happened. Extensible: encoded as its name.
    public struct Kind: Hashable, Sendable, Codable, CustomStringConvertible {
        /// The kind's stable name.
        public let name: String
        /// Creates a kind.
        public init(_ name: String) { self.name = name }
        /// The name.
        public var description: String { name }

        /// The message entered the outbox (status queued).
        public static let enqueued = Kind("enqueued")
        /// The message was taken for sending; `attempt` counts from 1.
        public static let attempt = Kind("attempt")
        /// The message's status changed (to `status`, with `transport` and `reason`).
        public static let status = Kind("status")
        /// A send in progress was cut by a restart; the message is queued again.
        public static let requeued = Kind("requeued")
        /// The message's expiry passed before delivery.
        public static let expired = Kind("expired")
        /// The message arrived for this node.
        public static let received = Kind("received")

        /// Decodes the name.
        public init(from decoder: any Decoder) throws {
            name = try decoder.singleValueContainer().decode(String.self)
        }

        /// Encodes the name.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(name)
        }
    }

    /// When it happened (`occurred_at` in JSON).
    public var at: Date
    /// What happened.
    public var kind: Kind
    /// The message's status after the event.
    public var status: MessageStatus?
    /// The transport involved, if any.
    public var transport: String?
    /// Why, when the event has a reason (a failure, an expiry, a restart).
    public var reason: String?
    /// The attempt number, for ``Kind/attempt`` events.
    public var attempt: Int?

    enum CodingKeys: String, CodingKey {
        case at = "occurredAt"
        case kind, status, transport, reason, attempt
    }

    init(_ row: TraceRow) {
        at = Millis.date(row.at)
        kind = Kind(row.kind)
        status = row.status.map(MessageStatus.init)
        transport = row.transport
        reason = row.reason
        attempt = row.attempt
    }
}

/// The message history of a store: every message sent or received (until
/// ``StoreConfiguration/historyLimit`` prunes the oldest finished ones), each with its
/// trace. Written by ``StoreOutbox`` and ``StoreInbox``; read here.
public struct MessageHistory: Sendable {
    let database: StoreDatabase

    /// Payloads shorter than this (64 KiB) that are UTF-8 keep their text in the history.
    public static let textLimit = 64 << 10
    /// How many of a payload's first bytes the history keeps when it keeps no text.
    public static let headBytes = 1_024

    /// History entries, newest first (the delivery receipts this node returns are not
    /// listed).
    /// - Parameters:
    ///   - peer: only messages to or from this peer; nil for all.
    ///   - matching: only messages whose text contains this (ASCII letters in any
    ///     case); nil for all.
    ///   - limit: at most this many.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func entries(
        peer: PeerID? = nil,
        matching: String? = nil,
        limit: Int = 100
    ) async throws(MeshError) -> [HistoryEntry] {
        let limit = max(0, limit)
        var conditions = ["flags & 2 = 0"]
        var arguments: StatementArguments = []
        if let peer {
            conditions.append("peer = ?")
            _ = arguments.append(contentsOf: [peer.hex])
        }
        if let matching {
            conditions.append("instr(lower(text), lower(?)) > 0")
            _ = arguments.append(contentsOf: [matching])
        }
        _ = arguments.append(contentsOf: [limit])
        let bound = arguments
        let sql = "SELECT * FROM history WHERE \(conditions.joined(separator: " AND ")) ORDER BY id DESC LIMIT ?"
        return try await database.read("read the message history") { db in
            try HistoryRow.fetchAll(db, sql: sql, arguments: bound).map(HistoryEntry.init)
        }
    }

    /// The history entry of one message, if the store remembers it.
    /// - Parameter direction: which entry, when the message went both ways.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func entry(_ id: MessageID, direction: MessageDirection = .outbound) async throws(MeshError) -> HistoryEntry?
    {
        try await database.read("read the history of message \(id.hex)") { db in
            try HistoryRow.fetchOne(
                db,
                sql: "SELECT * FROM history WHERE messageID = ? AND direction = ?",
                arguments: [id.hex, direction.name]
            ).map(HistoryEntry.init)
        }
    }

    /// The trace of one message, oldest event first: every status change with its
    /// transport and reason, every attempt, restarts and expiry. Empty when the store
    /// does not remember the message.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func trace(of id: MessageID, direction: MessageDirection = .outbound) async throws(MeshError) -> [TraceEvent]
    {
        try await database.read("read the trace of message \(id.hex)") { db in
            try TraceRow.fetchAll(
                db,
                sql: """
                    SELECT trace.* FROM trace JOIN history ON history.id = trace.historyID
                    WHERE history.messageID = ? AND history.direction = ? ORDER BY trace.id
                    """,
                arguments: [id.hex, direction.name]
            ).map(TraceEvent.init)
        }
    }

    /// Entries held now.
    public var count: Int {
        get async throws(MeshError) {
            try await database.read("count the message history") { db in try HistoryRow.fetchCount(db) }
        }
    }

    /// Deletes the oldest finished entries (and their traces) beyond `limit`; entries of
    /// messages still in the outbox are kept. Returns how many were deleted.
    static func prune(_ db: Database, keeping limit: Int) throws -> Int {
        let excess = try HistoryRow.fetchCount(db) - limit
        guard excess > 0 else { return 0 }
        try db.execute(
            sql: """
                DELETE FROM history WHERE id IN (
                    SELECT id FROM history WHERE status NOT IN ('queued', 'sent')
                    AND id NOT IN (SELECT historyID FROM outbox) ORDER BY id LIMIT ?)
                """,
            arguments: [excess]
        )
        return db.changesCount
    }

    /// Appends one event to the trace of history row `historyID`.
    static func record(
        _ db: Database,
        historyID: Int64,
        at: Int64,
        kind: TraceEvent.Kind,
        status: MessageStatus?,
        transport: String? = nil,
        reason: String? = nil,
        attempt: Int? = nil
    ) throws {
        // Cached: every outbox and inbox write adds an event.
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO trace (historyID, at, kind, status, transport, reason, attempt)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        )
        try statement.execute(arguments: [historyID, at, kind.name, status?.name, transport, reason, attempt])
    }
}
