import Foundation
import GRDB
import Logging
import MeshCore

/// The persisted flood duplicate cache (MeshCore's ``FloodSeenStore``, docs/PROTOCOL.md
/// §A.9): the IDs of flooded messages this node took or started, so that a copy
/// arriving after a restart is a duplicate, never flooded again. An ID is kept for the
/// dedup retention (``StoreConfiguration/dedupRetention``), then ``MeshStore/maintain(now:)``
/// forgets it.
public struct FloodSeenLog: FloodSeenStore {
    let database: StoreDatabase

    /// Whether `id` is remembered; false (and a log line) when the store cannot be read.
    public func contains(_ id: MessageID) async -> Bool {
        do {
            return try await database.read("look up flood \(id.hex)") { db in
                try Bool.fetchOne(
                    db,
                    sql: "SELECT EXISTS(SELECT 1 FROM floodSeen WHERE messageID = ?)",
                    arguments: [id.hex]
                ) ?? false
            }
        } catch {
            database.logger.error("\(error)")
            return false
        }
    }

    /// Remembers `id`, committed before it returns.
    /// - Returns: true when it was new.
    /// - Throws: ``MeshError`` when the store cannot write.
    @discardableResult
    public func insert(_ id: MessageID) async throws(MeshError) -> Bool {
        let now = database.nowMillis
        return try await database.write("remember flood \(id.hex)") { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO floodSeen(messageID, seenAt) VALUES (?, ?)",
                arguments: [id.hex, now]
            )
            return db.changesCount == 1
        }
    }

    /// IDs remembered now.
    public var count: Int {
        get async throws(MeshError) {
            try await database.read("count the flood duplicate cache") { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM floodSeen") ?? 0
            }
        }
    }

    static func prune(_ db: Database, before cutoff: Int64) throws -> Int {
        try db.execute(sql: "DELETE FROM floodSeen WHERE seenAt < ?", arguments: [cutoff])
        return db.changesCount
    }
}
