import MeshCore

/// The reply to `peers`.
public struct PeersReply: Codable, Sendable, Hashable {
    /// Every peer with a live link, with its links best first.
    public var peers: [PeerSnapshot]
    /// The contact aliases of those peers that are contacts, by peer ID (hex).
    public var aliases: [String: String]? = nil
    /// The names those peers claimed in their last handshake (`node.name`), by peer ID
    /// (hex): self-chosen and not unique, a claim rather than an identity.
    public var names: [String: String]? = nil
}

/// The reply to `routes`.
public struct RoutesReply: Codable, Sendable, Hashable {
    /// The route table: every destination this node can reach, direct links (1 hop)
    /// included, as ``Router/routes()`` lists them.
    public var routes: [RouteSnapshot]
    /// The contact aliases of the destinations and next hops that are contacts, by
    /// peer ID (hex).
    public var aliases: [String: String]?
    /// The names the destinations and next hops claimed in their last handshake with
    /// this node (`node.name`), by peer ID (hex).
    public var names: [String: String]? = nil

    /// Creates a reply.
    public init(routes: [RouteSnapshot], aliases: [String: String]? = nil, names: [String: String]? = nil) {
        self.routes = routes
        self.aliases = aliases
        self.names = names
    }
}
