import GRDB
import Logging
import MeshCore

/// The persisted sequences of this node's own route announcements (MeshCore's
/// ``AnnounceStateStore``, docs/PROTOCOL.md §A.5, "Restarting"): one row, replaced at
/// every new own announcement (every `routing.announce_interval_ms`, and when a route
/// request asks for a new sequence). A restarted node repeats the sequence the mesh
/// holds instead of announcing a new one that would cross every link.
public struct AnnounceStateLog: AnnounceStateStore {
    let database: StoreDatabase

    /// The state saved last; nil when none was, or (with a log line) when the store
    /// cannot be read: the node then announces a new sequence, as it did before it kept
    /// one.
    public func load() async -> AnnounceState? {
        do {
            return try await database.read("read the announcement state") { db in
                guard let row = try Row.fetchOne(db, sql: "SELECT unsolicited, latest FROM announceState WHERE id = 1")
                else { return nil }
                let unsolicited: Int64 = row["unsolicited"]
                let latest: Int64 = row["latest"]
                return AnnounceState(unsolicited: UInt64(bitPattern: unsolicited), latest: UInt64(bitPattern: latest))
            }
        } catch {
            database.logger.error("\(error); this node announces a new sequence instead")
            return nil
        }
    }

    /// Replaces the state, committed before it returns; a failure is logged (it costs a
    /// new sequence at the next restart, nothing else).
    public func save(_ state: AnnounceState) async {
        do {
            try await database.write("save the announcement state") { db in
                try db.execute(
                    sql: "INSERT OR REPLACE INTO announceState(id, unsolicited, latest) VALUES (1, ?, ?)",
                    arguments: [Int64(bitPattern: state.unsolicited), Int64(bitPattern: state.latest)]
                )
            }
        } catch {
            database.logger.error("\(error); the next restart announces a new sequence")
        }
    }
}
