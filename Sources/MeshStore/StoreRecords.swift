import Foundation
import GRDB
import MeshCore

// The rows of the store's tables, as GRDB records. Internal: the public API speaks
// MeshCore's types (PeerID, MessageID, Date); these speak the columns (hex text,
// milliseconds).

/// A row of `inbox`.
struct InboxRow: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "inbox"
    var sequence: Int64?
    var messageID: String
    var sender: String
    var transport: String
    var receivedAt: Int64
    var bytes: Int
    var payload: Data
    /// The topic of a topic message (v4); nil for a direct message.
    var topic: String?
    /// 1 when it arrived as an emergency (v6).
    var emergency: Int = 0
    /// The file in the payload directory that holds the payload (v8; then ``payload``
    /// is empty); nil when the payload is in the row.
    var payloadFile: String?
    /// When the sender sealed it (v16, milliseconds since 1970), as its envelope says;
    /// nil when unknown.
    var sentAt: Int64? = nil

    mutating func didInsert(_ inserted: InsertionSuccess) {
        sequence = inserted.rowID
    }
}

/// A row of `dedup`.
struct DedupRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "dedup"
    var origin: String
    var messageID: String
    var receivedAt: Int64
}

/// A row of `history`.
struct HistoryRow: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "history"
    var id: Int64?
    var messageID: String
    var direction: String
    var peer: String
    var bytes: Int
    var status: String
    var transport: String?
    var reason: String?
    var createdAt: Int64
    var sentAt: Int64?
    var deliveredAt: Int64?
    var finishedAt: Int64?
    var expiresAt: Int64?
    var attempts: Int
    /// DATA flags of an outbound message (bit 1: a delivery receipt); 0 inbound.
    var flags: Int = 0
    /// The digest a delivery receipt must carry (outbound, with receipts on).
    var contentDigest: Data?
    /// The origin of a message this node relays (hex); nil for its own.
    var origin: String?
    /// The neighbour that handed a relayed message to this node (hex); nil otherwise.
    var previousHop: String?
    /// The TTL a relayed message goes on with (one below the TTL it came with); nil
    /// otherwise.
    var ttl: Int?
    /// The payload as text, when it is UTF-8 and under ``MessageHistory/textLimit``
    /// bytes; nil otherwise (and for relayed messages and receipts).
    var text: String? = nil
    /// The payload's first ``MessageHistory/headBytes`` bytes when ``text`` is nil.
    var head: Data? = nil
    /// When an inbound message was marked read; nil while unread.
    var readAt: Int64? = nil

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }

    /// Keeps what the history shows of `payload` (`bytes` long; it may be only the
    /// start of a payload kept in a file): its text, else its head.
    mutating func keep(payload: some Collection<UInt8>, bytes: Int) {
        if bytes < MessageHistory.textLimit, payload.count == bytes,
            let text = String(validating: payload, as: UTF8.self)
        {
            self.text = text
            head = nil
        } else {
            text = nil
            head = payload.isEmpty ? nil : Data(payload.prefix(MessageHistory.headBytes))
        }
    }

    /// The outbound history row of `messageID`, if any.
    static func outbound(_ db: Database, _ messageID: String) throws -> HistoryRow? {
        // Cached, with its columns named and read by position: every outbox write
        // looks an entry up, and compiling the statement or decoding the row by column
        // name cost more than running it.
        let statement = try db.cachedStatement(
            sql: "SELECT \(Self.columns) FROM history WHERE messageID = ? AND direction = 'outbound'"
        )
        return try statement.firstRow([messageID], HistoryRow.init(positional:))
    }

    /// Every column, in the order ``init(positional:)`` reads them.
    static let columns = """
        id, messageID, direction, peer, bytes, status, transport, reason, createdAt, sentAt, deliveredAt, \
        finishedAt, expiresAt, attempts, flags, contentDigest, origin, previousHop, ttl, text, head, readAt
        """

    /// Inserts the row with a cached statement (the record's own insert encodes it
    /// column by column through `Codable` each time) and sets ``id``. With `orIgnore`
    /// a row that conflicts is left alone: then `db.changesCount` is 0 and ``id`` nil.
    mutating func insertRow(_ db: Database, orIgnore: Bool = false) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT \(orIgnore ? "OR IGNORE " : "")INTO history (messageID, direction, peer, bytes, status, \
                transport, reason, createdAt, sentAt, deliveredAt, finishedAt, expiresAt, attempts, flags, \
                contentDigest, origin, previousHop, ttl, text, head, readAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        )
        let values: [(any DatabaseValueConvertible)?] = [
            messageID, direction, peer, bytes, status, transport, reason, createdAt, sentAt, deliveredAt,
            finishedAt, expiresAt, attempts, flags, contentDigest, origin, previousHop, ttl, text, head, readAt,
        ]
        try statement.execute(arguments: StatementArguments(values))
        if db.changesCount == 1 { id = db.lastInsertedRowID }
    }

    /// The ID and status of the outbound entry of `messageID`, if any: what a status
    /// change reads (decoding the whole row cost more than the change).
    static func outboundStatus(
        _ db: Database,
        _ messageID: String
    ) throws -> (id: Int64, status: String, attempts: Int)? {
        try db.cachedStatement(
            sql: "SELECT id, status, attempts FROM history WHERE messageID = ? AND direction = 'outbound'"
        ).firstRow([messageID]) { row in (row[0], row[1], row[2]) }
    }

    /// Records a status change of entry `id` at `now`: the status, the transport and
    /// reason when given, when it was first sent (sent or delivered), delivered, or
    /// finished (failed or expired), and at least `attempts` attempts.
    static func updateStatus(
        _ db: Database,
        id: Int64,
        to status: MessageStatus,
        transport: String?,
        reason: String?,
        attempts: Int,
        now: Int64
    ) throws {
        let statement = try db.cachedStatement(
            sql: """
                UPDATE history SET status = ?1, transport = COALESCE(?2, transport), reason = COALESCE(?3, reason),
                    sentAt = CASE WHEN ?4 THEN COALESCE(sentAt, ?7) ELSE sentAt END,
                    deliveredAt = CASE WHEN ?5 THEN ?7 ELSE deliveredAt END,
                    finishedAt = CASE WHEN ?6 THEN ?7 ELSE finishedAt END,
                    attempts = max(attempts, ?8)
                WHERE id = ?9
                """
        )
        let values: [(any DatabaseValueConvertible)?] = [
            status.name, transport, reason, status == .sent || status == .delivered, status == .delivered,
            status == .failed || status == .expired, now, attempts, id,
        ]
        try statement.execute(arguments: StatementArguments(values))
    }
}

extension HistoryRow {
    /// A row selected with ``columns``.
    init(positional row: Row) {
        self.init(
            id: row[0],
            messageID: row[1],
            direction: row[2],
            peer: row[3],
            bytes: row[4],
            status: row[5],
            transport: row[6],
            reason: row[7],
            createdAt: row[8],
            sentAt: row[9],
            deliveredAt: row[10],
            finishedAt: row[11],
            expiresAt: row[12],
            attempts: row[13],
            flags: row[14],
            contentDigest: row[15],
            origin: row[16],
            previousHop: row[17],
            ttl: row[18],
            text: row[19],
            head: row[20],
            readAt: row[21]
        )
    }
}

/// A row of `trace`.
struct TraceRow: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "trace"
    var id: Int64?
    var historyID: Int64
    var at: Int64
    var kind: String
    var status: String?
    var transport: String?
    var reason: String?
    var attempt: Int?

    mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

/// A row of `outbox`.
struct OutboxRow: Codable, FetchableRecord, MutablePersistableRecord {
    static let databaseTableName = "outbox"
    var number: Int64?
    var historyID: Int64
    var messageID: String
    var destination: String
    var flags: Int
    var bytes: Int
    var claimed: Bool
    var payload: Data
    /// The origin of a relayed message (hex); nil for this node's own.
    var origin: String?
    /// The TTL a relayed message goes on with; nil for the router's default.
    var ttl: Int?
    /// The file in ``OutboxPayloadFiles`` that holds the payload (then ``payload`` is
    /// empty); nil when the payload is in the row.
    var payloadFile: String?

    mutating func didInsert(_ inserted: InsertionSuccess) {
        number = inserted.rowID
    }
}

extension OutboxRow {
    /// Inserts the row with a cached statement and sets ``number`` (as
    /// ``HistoryRow/insertRow(_:orIgnore:)``).
    mutating func insertRow(_ db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO outbox (historyID, messageID, destination, flags, bytes, claimed, payload, origin, ttl, \
                payloadFile) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        )
        let values: [(any DatabaseValueConvertible)?] = [
            historyID, messageID, destination, flags, bytes, claimed, payload, origin, ttl, payloadFile,
        ]
        try statement.execute(arguments: StatementArguments(values))
        number = db.lastInsertedRowID
    }
}

extension InboxRow {
    /// Inserts the row unless its key is taken, with a cached statement; sets
    /// ``sequence`` when it was inserted (then `db.changesCount` is 1).
    mutating func insertRowOrIgnore(_ db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT OR IGNORE INTO inbox (messageID, sender, transport, receivedAt, bytes, payload, topic, \
                emergency, payloadFile, sentAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        )
        let values: [(any DatabaseValueConvertible)?] = [
            messageID, sender, transport, receivedAt, bytes, payload, topic, emergency, payloadFile, sentAt,
        ]
        try statement.execute(arguments: StatementArguments(values))
        if db.changesCount == 1 { sequence = db.lastInsertedRowID }
    }
}

/// A row of `contact`.
struct ContactRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "contact"
    var peer: String
    var alias: String
    var note: String?
    var blocked: Bool
    var addedAt: Int64
}

/// A row of `address`.
struct AddressRow: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "address"
    var peer: String
    var transport: String
    var address: String
    var successes: Int
    var failures: Int
    var lastSeen: Int64
    var lastSuccess: Int64?
    var lastFailure: Int64?
}
