import Foundation
import GRDB
import Logging
import MeshCore

/// The persisted route table (MeshCore's ``RouteTableStore``, docs/PROTOCOL.md §A.5,
/// "Restarting"): a row per advertisement, replaced as a whole in one transaction every
/// 5 minutes and when the router stops. A restarted node starts with the routes it had,
/// aged by the time it was down, dormant until their neighbours link again.
public struct RouteTableLog: RouteTableStore {
    let database: StoreDatabase

    /// The entries saved last, aged by the wall-clock time since the save; empty when
    /// none were, or (with a log line) when the store cannot be read or holds a malformed
    /// row: the node then starts with an empty table, as it did before it kept one.
    public func load() async -> [SavedRouteEntry] {
        do {
            let now = Self.milliseconds(Date())
            return try await database.read("read the route table") { db in
                // Per origin: its entry as saved, and how long ago it was saved.
                var entries: [PeerID: (entry: SavedRouteEntry, down: Duration)] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT * FROM routeTable") {
                    let origin = try PeerID.stored(row["origin"])
                    let advertisement = SavedRouteEntry.Advertisement(
                        neighbour: try PeerID.stored(row["neighbour"]),
                        hops: UInt8(clamping: row["hops"] as Int64),
                        sequence: UInt64(bitPattern: row["sequence"]),
                        signature: [UInt8](row["signature"] as Data),
                        transport: row["transport"],
                        age: .milliseconds(row["ageMs"] as Int64)
                    )
                    let summarised: Int64? = row["summarised"]
                    entries[
                        origin,
                        default: (
                            SavedRouteEntry(
                                origin: origin,
                                highest: UInt64(bitPattern: row["highest"]),
                                age: .milliseconds(row["entryAgeMs"] as Int64),
                                summarised: summarised.map { UInt64(bitPattern: $0) },
                                feasibilityDistance: UInt8(clamping: row["feasibilityDistance"] as Int64),
                                advertisements: []
                            ),
                            .milliseconds(max(0, now - (row["savedAt"] as Int64)))
                        )
                    ].entry.advertisements.append(advertisement)
                }
                return entries.values.map { $0.entry.aged(by: $0.down) }
            }
        } catch {
            database.logger.error("\(error); this node starts with an empty route table")
            return []
        }
    }

    /// Replaces the saved table, committed before it returns; a failure is logged (it
    /// costs the neighbours' refill at the next restart, nothing else).
    public func save(_ entries: [SavedRouteEntry]) async {
        let now = Self.milliseconds(Date())
        do {
            try await database.write("save the route table") { db in
                try db.execute(sql: "DELETE FROM routeTable")
                let insert = try db.makeStatement(
                    sql: """
                        INSERT OR REPLACE INTO routeTable(origin, neighbour, hops, sequence, signature, transport, ageMs,
                            highest, entryAgeMs, summarised, feasibilityDistance, savedAt)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """
                )
                for entry in entries {
                    for advertisement in entry.advertisements {
                        try insert.execute(arguments: [
                            entry.origin.hex, advertisement.neighbour.hex, Int64(advertisement.hops),
                            Int64(bitPattern: advertisement.sequence), Data(advertisement.signature),
                            advertisement.transport,
                            Self.milliseconds(advertisement.age), Int64(bitPattern: entry.highest),
                            Self.milliseconds(entry.age),
                            entry.summarised.map { Int64(bitPattern: $0) }, Int64(entry.feasibilityDistance), now,
                        ])
                    }
                }
            }
        } catch {
            database.logger.error("\(error); the next restart starts with an empty route table")
        }
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        Int64((duration / .milliseconds(1)).rounded(.down))
    }
}
