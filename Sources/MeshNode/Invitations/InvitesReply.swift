import Foundation
import MeshCore
import MeshStore

/// The reply to `invites` and `invite_revoke`: the invitations this node issued,
/// newest first, and who joined by each.
public struct InvitesReply: Codable, Sendable, Hashable {
    /// One invitation.
    public struct Entry: Codable, Sendable, Hashable {
        /// One node that joined by it.
        public struct Joiner: Codable, Sendable, Hashable {
            /// The joined node.
            public var peer: PeerID
            /// Its alias, when it is a contact.
            public var alias: String?
            /// When this node heard it joined.
            public var joinedAt: Date
        }

        /// Its ID (16 hex characters).
        public var id: String
        /// When it was made.
        public var issuedAt: Date
        /// When it stops being valid.
        public var expiresAt: Date
        /// Whether it was revoked.
        public var revoked: Bool
        /// Whether it has expired.
        public var expired: Bool
        /// Who joined by it.
        public var joined: [Joiner]
    }

    /// Every invitation issued, newest first.
    public var invitations: [Entry]
    /// What the command changed, in one line (absent for `invites`).
    public var changed: String?
}
