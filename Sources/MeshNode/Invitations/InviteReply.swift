import Foundation
import MeshCore

/// The reply to `invite`: a signed invitation to this node.
public struct InviteReply: Codable, Sendable, Hashable {
    /// The invitation as a text link (`scmesh:` + base64url), for `scmesh join` on
    /// another node, or a QR code.
    public var link: String
    /// This node's peer ID.
    public var peer: PeerID
    /// Its display name (`node.name`), if it has one.
    public var name: String?
    /// The addresses in the invitation, as `transport address` (e.g. `tcp 192.0.2.7:7420`):
    /// where this node's transports listen.
    public var addresses: [String]
    /// When the invitation expires.
    public var expiresAt: Date
    /// Why the invitation may not get the joiner connected (no address to dial), if so.
    public var warning: String?
    /// Its ID (16 hex characters): `scmesh invites` lists it, `scmesh invite --revoke`
    /// takes it.
    public var id: String? = nil

    /// Creates a reply.
    public init(link: String, peer: PeerID, name: String?, addresses: [String], expiresAt: Date, warning: String? = nil)
    {
        self.link = link
        self.peer = peer
        self.name = name
        self.addresses = addresses
        self.expiresAt = expiresAt
        self.warning = warning
    }
}

/// The reply to `join`: the invitation checked, the contact added and the dials started.
public struct JoinReply: Codable, Sendable, Hashable {
    /// The inviting node.
    public var peer: PeerID
    /// Its alias in the contact book.
    public var alias: String
    /// Its display name from the invitation, if it has one.
    public var name: String?
    /// Whether the contact is new (false: it was a contact already, under ``alias``).
    public var contactAdded: Bool
    /// The addresses this node dials (as `transport address`, the local transport
    /// first: `tcp 192.0.2.7:7420`); the link comes up in the background (`scmesh peers`).
    public var dialling: [String]
    /// Addresses of the invitation this node has no transport for, with the reason.
    public var notDialled: [String]
    /// When the invitation expires.
    public var expiresAt: Date

    /// Creates a reply.
    public init(
        peer: PeerID,
        alias: String,
        name: String?,
        contactAdded: Bool,
        dialling: [String],
        notDialled: [String],
        expiresAt: Date
    ) {
        self.peer = peer
        self.alias = alias
        self.name = name
        self.contactAdded = contactAdded
        self.dialling = dialling
        self.notDialled = notDialled
        self.expiresAt = expiresAt
    }
}
