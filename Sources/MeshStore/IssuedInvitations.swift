import Foundation
import GRDB
import MeshCore

/// An invitation this node issued (`scmesh invite`), and who joined by it.
public struct IssuedInvitation: Sendable, Hashable, Codable {
    /// One node that joined by it.
    public struct Joiner: Sendable, Hashable, Codable {
        /// The joined node.
        public var peer: PeerID
        /// When this node heard of it.
        public var joinedAt: Date
    }

    /// Its ID: 16 hex characters of its signature (``IssuedInvitations/id(signature:)``).
    public var id: String
    /// When it was made.
    public var issuedAt: Date
    /// When it stops being valid.
    public var expiresAt: Date
    /// Whether it was revoked (`scmesh invite --revoke`).
    public var revoked: Bool
    /// The nodes that joined by it, first first.
    public var joined: [Joiner]
}

/// The invitations this node issued: recorded when made, so that a joiner's
/// acceptance can be matched to one, and revoked on request.
public struct IssuedInvitations: Sendable {
    let database: StoreDatabase

    /// An invitation's ID: the first 8 bytes of its signature, in hex. The link holds
    /// the signature, so only those who have the link know the ID.
    public static func id(signature: [UInt8]) -> String {
        Hex.encode(signature.prefix(8))
    }

    /// Records an invitation just made.
    /// - Returns: false, recording nothing, when an invitation with that ID exists
    ///   (the same content signed again: signatures are deterministic).
    /// - Throws: ``MeshError`` when the file cannot be written.
    @discardableResult
    public func record(id: String, expiresAt: Date) async throws(MeshError) -> Bool {
        let now = Millis.from(database.clock())
        return try await database.write("record invitation \(id)") { db in
            try db.execute(
                sql: "INSERT INTO invitation(id, issuedAt, expiresAt) VALUES (?, ?, ?) ON CONFLICT(id) DO NOTHING",
                arguments: [id, now, Millis.from(expiresAt)]
            )
            return db.changesCount > 0
        }
    }

    /// Every invitation issued, newest first, with its joiners.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func all() async throws(MeshError) -> [IssuedInvitation] {
        try await database.read("list the invitations") { db in
            let joins = try Row.fetchAll(db, sql: "SELECT id, peer, joinedAt FROM invitationJoin ORDER BY joinedAt")
            var joiners: [String: [IssuedInvitation.Joiner]] = [:]
            for row in joins {
                joiners[row["id"], default: []].append(
                    IssuedInvitation.Joiner(
                        peer: try PeerID.stored(row["peer"]),
                        joinedAt: Millis.date(row["joinedAt"] as Int64)
                    )
                )
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM invitation ORDER BY issuedAt DESC, id").map { row in
                let id: String = row["id"]
                return IssuedInvitation(
                    id: id,
                    issuedAt: Millis.date(row["issuedAt"] as Int64),
                    expiresAt: Millis.date(row["expiresAt"] as Int64),
                    revoked: row["revoked"],
                    joined: joiners[id] ?? []
                )
            }
        }
    }

    /// Revokes the invitation `id`: a joiner's acceptance of it is ignored from now on.
    /// - Returns: false when no invitation has that ID.
    /// - Throws: ``MeshError`` when the file cannot be written.
    public func revoke(id: String) async throws(MeshError) -> Bool {
        try await database.write("revoke invitation \(id)") { db in
            try db.execute(sql: "UPDATE invitation SET revoked = 1 WHERE id = ?", arguments: [id])
            return db.changesCount == 1
        }
    }

    /// Records that `peer` joined by invitation `id`, if that invitation was issued
    /// here, is not revoked and had not expired.
    /// - Returns: why it was not recorded (`unknown`, `revoked`, `expired`), or nil.
    /// - Throws: ``MeshError`` when the file cannot be written.
    public func recordJoin(id: String, peer: PeerID) async throws(MeshError) -> String? {
        let now = Millis.from(database.clock())
        return try await database.write("record a join by invitation \(id)") { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT revoked, expiresAt FROM invitation WHERE id = ?",
                    arguments: [id]
                )
            else { return "unknown" }
            if row["revoked"] as Bool { return "revoked" }
            if (row["expiresAt"] as Int64) < now { return "expired" }
            try db.execute(
                sql: "INSERT INTO invitationJoin(id, peer, joinedAt) VALUES (?, ?, ?) ON CONFLICT(id, peer) DO NOTHING",
                arguments: [id, peer.hex, now]
            )
            return nil
        }
    }
}
