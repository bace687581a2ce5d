import Foundation
import GRDB
import Logging
import MeshCore

/// Expiry, deletion and claim release: the outbox's upkeep, run by maintenance and at open.
extension StoreOutbox {
    /// Marks every queued (unclaimed) or sent message whose expiry is at or before `now`
    /// as ``MessageStatus/expired``, with a reason and a trace event; their payloads
    /// leave the outbox. A message being sent right now (claimed) is left to its send.
    /// - Parameter now: the current time; nil for the store's clock.
    /// - Returns: the IDs of the messages that expired, oldest first.
    /// - Throws: ``MeshError`` when the store cannot write.
    @discardableResult
    public func expire(now: Date? = nil) async throws(MeshError) -> [MessageID] {
        let now = now.map(Millis.from) ?? database.nowMillis
        let claims = database.claims
        let (expired, removed) = try await database.write("expire outbound messages") { db in
            try Self.expire(db, now: now, sparing: claims.held)
        }
        database.payloadFiles.remove(removed)
        return expired
    }

    /// Marks the messages expired (see ``expire(now:)``) except those being sent
    /// (`sparing`: their IDs, hex); returns their IDs and the payload files to remove
    /// once the transaction is committed.
    static func expire(_ db: Database, now: Int64, sparing claimed: Set<String>) throws -> ([MessageID], [String]) {
        let rows = try HistoryRow.fetchAll(
            db,
            sql: """
                SELECT * FROM history WHERE direction = 'outbound' AND status IN ('queued', 'sent')
                AND expiresAt <= ?
                ORDER BY id
                """,
            arguments: [now]
        )
        var expired: [MessageID] = []
        var removed: [String] = []
        for var row in rows where !claimed.contains(row.messageID) {
            removed += try markExpired(db, &row, now: now)
            expired.append(try MessageID.stored(row.messageID))
        }
        return (expired, removed)
    }

    /// Marks one entry expired and deletes its outbox row; returns the payload file to
    /// remove after the commit.
    static func markExpired(_ db: Database, _ row: inout HistoryRow, now: Int64) throws -> [String] {
        guard let historyID = row.id else { return [] }
        let reason =
            "expired after \(Millis.describe(now - row.createdAt)) without delivery (status was \(row.status), \(row.attempts) attempts)"
        row.status = MessageStatus.expired.name
        row.reason = reason
        row.finishedAt = now
        try row.update(db)
        let removed = try deleteRow(db, historyID: historyID)
        try MessageHistory.record(db, historyID: historyID, at: now, kind: .expired, status: .expired, reason: reason)
        return removed
    }

    /// Deletes the outbox row of a history entry; returns its payload file (to remove
    /// once the deletion is committed).
    static func deleteRow(_ db: Database, historyID: Int64) throws -> [String] {
        try PayloadRows.delete(db, from: "outbox", where: "historyID = ?", historyID)
    }

    /// The payload files outbox rows name (for ``OutboxPayloadFiles/removeOrphans(keeping:)``).
    static func payloadFileNames(_ db: Database) throws -> Set<String> {
        try PayloadRows.fileNames(db, in: "outbox")
    }

    /// Queues again every message claimed when the store was last closed (or the node
    /// killed): a claim does not survive a restart. Returns their IDs.
    static func releaseClaims(_ db: Database, now: Int64) throws -> [MessageID] {
        let rows = try OutboxRow.fetchAll(db, sql: "SELECT * FROM outbox WHERE claimed = 1 ORDER BY number")
        for row in rows {
            try MessageHistory.record(
                db,
                historyID: row.historyID,
                at: now,
                kind: .requeued,
                status: .queued,
                reason: "the store was reopened while the message was being sent; it is queued again"
            )
        }
        try db.execute(sql: "UPDATE outbox SET claimed = 0 WHERE claimed = 1")
        return try rows.map { try MessageID.stored($0.messageID) }
    }

    /// Messages waiting in the outbox (queued, claimed or not).
    public var pendingCount: Int {
        get async throws(MeshError) {
            try await database.read("count the outbox") { db in try OutboxRow.fetchCount(db) }
        }
    }

    /// Payload bytes waiting in the outbox.
    public var pendingBytes: Int {
        get async throws(MeshError) {
            try await database.read("count the outbox bytes") { db in
                try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(bytes), 0) FROM outboxShare") ?? 0
            }
        }
    }
}
