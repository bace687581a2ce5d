import Foundation
import GRDB
import MeshCore

extension AddressLedger {
    /// Records the name `peer` claimed in its last link handshake (docs/PROTOCOL.md
    /// §B.2.1), or forgets the one held when it claimed none.
    /// - Parameter date: when; nil for the store's clock.
    /// - Throws: ``MeshError`` when the file cannot be written.
    public func recordName(_ name: String?, of peer: PeerID, at date: Date? = nil) async throws(MeshError) {
        let at = date.map(Millis.from) ?? database.nowMillis
        try await database.write("record the name of \(peer.hex)") { db in
            if let name {
                try db.execute(
                    sql: """
                        INSERT INTO peerName(peer, name, heardAt) VALUES (?, ?, ?)
                        ON CONFLICT(peer) DO UPDATE SET name = excluded.name, heardAt = excluded.heardAt
                        """,
                    arguments: [peer.hex, name, at]
                )
            } else {
                try db.execute(sql: "DELETE FROM peerName WHERE peer = ?", arguments: [peer.hex])
            }
        }
    }

    /// The names peers claimed, the most recently heard `limit` of them, as stored. A
    /// node reads this at start, so that listings name strangers before they link
    /// again; the router checks each (``PeerNames/restore(_:)``), as the file is outside
    /// the handshake's protection.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func names(limit: Int = PeerNames.maximumPeers) async throws(MeshError) -> [PeerID: String] {
        let limit = max(0, limit)
        return try await database.read("read the peers' names") { db in
            var names: [PeerID: String] = [:]
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT peer, name FROM peerName ORDER BY heardAt DESC LIMIT ?",
                arguments: [limit]
            )
            for row in rows { names[try PeerID.stored(row["peer"] as String)] = row["name"] as String }
            return names
        }
    }
}
