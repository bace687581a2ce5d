import Foundation
import MeshCore
import MeshStore

extension ControlHandler {
    /// `invite_revoke`: revokes the invitation `id` names, then lists them.
    /// - Throws: `.invalidArgument` without an ID, or as ``invites(revoke:)``.
    package func revokeInvite(_ id: String?) async throws -> InvitesReply {
        guard let id, !id.isEmpty else {
            throw MeshError(
                .invalidArgument,
                "invite_revoke needs \"id\": the invitation's ID (scmesh invites lists them)"
            )
        }
        return try await invites(revoke: id)
    }

    /// `invites`: the invitations this node issued and who joined by each;
    /// `invite_revoke` (with `id`, the ID or its unique start) revokes one first, so
    /// that a later acceptance of it is ignored.
    /// - Throws: `.invalidArgument` when `revoke` names no invitation, or more than one.
    package func invites(revoke: String? = nil) async throws -> InvitesReply {
        var issued = try await store.invitations.all()
        var changed: String?
        if let revoke {
            let prefix = revoke.lowercased()
            let matches = issued.filter { $0.id.hasPrefix(prefix) }
            guard prefix.count >= 4, matches.count == 1, let match = matches.first else {
                throw MeshError(
                    .invalidArgument,
                    matches.count > 1
                        ? "invite_revoke: \"\(TextReport.escaped(revoke))\" is the start of \(matches.count) invitation IDs; give more characters"
                        : "invite_revoke: no invitation issued here has the ID \"\(TextReport.escaped(revoke))\" (at least 4 hex characters; scmesh invites lists them)"
                )
            }
            _ = try await store.invitations.revoke(id: match.id)
            changed = "revoked invitation \(match.id)"
            issued = try await store.invitations.all()
        }
        let aliases = Dictionary(try await store.contacts.all().map { ($0.peer, $0.alias) }) { first, _ in first }
        let now = Date()
        return InvitesReply(
            invitations: issued.map { invitation in
                InvitesReply.Entry(
                    id: invitation.id,
                    issuedAt: invitation.issuedAt,
                    expiresAt: invitation.expiresAt,
                    revoked: invitation.revoked,
                    expired: invitation.expiresAt < now,
                    joined: invitation.joined.map {
                        InvitesReply.Entry.Joiner(peer: $0.peer, alias: aliases[$0.peer], joinedAt: $0.joinedAt)
                    }
                )
            },
            changed: changed
        )
    }
}
