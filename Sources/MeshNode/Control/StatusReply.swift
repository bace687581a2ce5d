import MeshCore

/// The reply to `status`.
public struct StatusReply: Codable, Sendable, Hashable {
    /// The node's peer ID (`peer`; formerly `peer_id`, still written, deprecated).
    public var peerID: PeerID
    /// `node.name` from the config.
    public var name: String?
    /// The data directory.
    public var dataDir: String
    /// Seconds since the node started.
    public var uptimeSeconds: Double
    /// `relay.enabled`.
    public var relayEnabled: Bool
    /// Every configured transport and its state.
    public var transports: [TransportStatus]
    /// Peers with a live link.
    public var peerCount: Int
    /// Messages held in the inbox.
    public var inboxCount: Int
    /// Messages from this node still on their way (queued, or sent and waiting for
    /// the receipt). Absent from replies of older nodes.
    public var outboxCount: Int?
    /// The router's counters.
    public var stats: RouterStats
    /// Counters of the transports that keep them (``TransportCounting``), by transport
    /// name: what remotes made them refuse or drop (`refused.max_inbound`,
    /// `link_closed.malformedFrame`, ...), and under `"control"` the control socket's
    /// own (`refused.control_max_connections`, `refused.request_too_large`,
    /// `dropped.control_write_timeout`). Absent from replies of older nodes.
    public var transportCounters: [String: [String: Int]]?
    /// Where the HTTP API listens (`host:port`), when it does.
    public var httpAddress: String?
    /// Why the HTTP API does not listen although `http.enabled` is on (bind failed).
    public var httpProblem: String?
    /// The wire protocol version this node speaks. Absent from replies of older nodes.
    public var wireVersion: Int?
    /// The optional protocol features this node speaks and announces (`features:`), by
    /// name; empty when every one is off. Absent from replies of older nodes.
    public var features: [String]?
    /// Whether the config turns the HTTP API on (`http.enabled`). Absent from replies
    /// of older nodes.
    public var httpEnabled: Bool? = nil
    /// Why the HTTP API listens elsewhere than `http.listen` says (its port was taken,
    /// so the node chose a free one), when it does.
    public var httpNote: String? = nil
    /// How well connected the node is, from ``peerCount``: `offline` (no peer), `poor`
    /// (1–2), `good` (3–5) or `excellent` (6 or more). Absent from replies of older nodes.
    public var networkQuality: String? = nil
    /// Received messages not yet marked read (`scmesh read`). Absent from replies of older nodes.
    public var unread: Int? = nil
    /// The largest payload a send takes, in bytes (`max_message_size`): a client
    /// reading a payload of unknown length stops there. Absent from replies of older nodes.
    public var maxMessageSize: Int? = nil

    enum CodingKeys: String, CodingKey {
        case peerID = "peer"
        case name, dataDir, uptimeSeconds, relayEnabled, transports, peerCount, inboxCount, outboxCount, stats
        case transportCounters, httpAddress, httpProblem, wireVersion, features, httpEnabled, httpNote
        case networkQuality, unread, maxMessageSize
    }
}

extension StatusReply: DeprecatedFieldNames {
    /// `peer_id`, the former name of `peer`.
    public var deprecatedFields: [(name: String, value: (any Encodable)?)] { [("peer_id", peerID)] }
}
