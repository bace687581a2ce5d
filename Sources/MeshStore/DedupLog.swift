import Foundation
import GRDB
import MeshCore

/// The persisted record of received message IDs, each with its origin and the time it
/// was received.
///
/// The inbox's exactly-once delivery rests on it: a message whose (origin, ID) is here
/// is a duplicate. IDs are chosen by their origin, so they are keyed on it: one
/// origin's message never makes another origin's message with the same ID a duplicate. An ID is kept at least ``StoreConfiguration/dedupRetention`` (by default
/// the longest expiry, 7 days, plus 1 day of clock skew), then ``prune(now:)`` (or
/// ``MeshStore/maintain(now:)``) forgets it.
public struct DedupLog: Sendable {
    let database: StoreDatabase

    /// Whether `id` from `origin` was received and not yet pruned.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func contains(_ id: MessageID, from origin: PeerID) async throws(MeshError) -> Bool {
        try await database.read("look up message \(id.hex) in the dedup log") { db in
            try Self.contains(db, id, from: origin)
        }
    }

    /// Remembers `id` from `origin` as received at `date` (nil: now).
    /// - Returns: true when the ID is new for that origin, false when it was already
    ///   known (unchanged).
    /// - Throws: ``MeshError`` when the store cannot write.
    @discardableResult
    public func insert(_ id: MessageID, from origin: PeerID, at date: Date? = nil) async throws(MeshError) -> Bool {
        let at = date.map(Millis.from) ?? database.nowMillis
        return try await database.write("remember message \(id.hex) in the dedup log") { db in
            try Self.insert(db, id, from: origin, at: at)
        }
    }

    /// Forgets the IDs received before `now` minus the retention.
    /// - Parameter now: the current time; nil for the store's clock.
    /// - Returns: how many IDs were forgotten.
    /// - Throws: ``MeshError`` when the store cannot write.
    @discardableResult
    public func prune(now: Date? = nil) async throws(MeshError) -> Int {
        let cutoff = (now.map(Millis.from) ?? database.nowMillis) - Millis.from(database.configuration.dedupRetention)
        return try await database.write("prune the dedup log") { db in
            try Self.prune(db, before: cutoff)
        }
    }

    /// IDs remembered now.
    public var count: Int {
        get async throws(MeshError) {
            try await database.read("count the dedup log") { db in try DedupRow.fetchCount(db) }
        }
    }

    /// Rows kept from before IDs were keyed on their origin have origin '' and match
    /// any origin until the retention forgets them.
    static func contains(_ db: Database, _ id: MessageID, from origin: PeerID) throws -> Bool {
        // Cached, as the insert's: every message received runs both.
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM dedup WHERE messageID = ? AND origin IN (?, ''))"),
            arguments: [id.hex, origin.hex]
        ) ?? false
    }

    static func insert(_ db: Database, _ id: MessageID, from origin: PeerID, at: Int64) throws -> Bool {
        guard try !contains(db, id, from: origin) else { return false }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO dedup (origin, messageID, receivedAt) VALUES (?, ?, ?)")
            .execute(arguments: [origin.hex, id.hex, at])
        return db.changesCount == 1
    }

    static func prune(_ db: Database, before cutoff: Int64) throws -> Int {
        try db.execute(sql: "DELETE FROM dedup WHERE receivedAt < ?", arguments: [cutoff])
        return db.changesCount
    }
}
