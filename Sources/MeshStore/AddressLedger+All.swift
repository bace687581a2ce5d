import Foundation
import GRDB
import MeshCore

extension AddressLedger {
    /// Every address of every peer, best first as in ``addresses(for:transport:)``
    /// (most recent success first, never-worked addresses last), at most `limit`.
    /// A node reads this at start to redial the peers it reached before.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func all(limit: Int = 10_000) async throws(MeshError) -> [LedgerEntry] {
        let limit = max(0, limit)
        return try await database.read("read the address ledger") { db in
            try AddressRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM address
                    ORDER BY lastSuccess IS NULL, lastSuccess DESC, failures ASC, lastSeen DESC LIMIT ?
                    """,
                arguments: [limit]
            ).map(LedgerEntry.init)
        }
    }
}
