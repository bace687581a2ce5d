/// The topic gossip's counters (part of ``RouterStats``).
public struct TopicCounters: Sendable, Hashable, Codable {
    /// Messages this node published.
    public var published = 0
    /// Messages delivered to this node's inbox (subscribed topics, first copy only).
    public var delivered = 0
    /// Valid messages seen for the first time (delivered, forwarded or both).
    public var accepted = 0
    /// Topic message frames written to links (pushes, IWANT answers, own publications).
    public var transmissions = 0
    /// Copies of messages already seen, dropped.
    public var duplicates = 0
    /// Messages dropped, by reason: `badSignature`, `expired`, `ttlExhausted`,
    /// `ignoredPeer` (from a penalised neighbour), `flooding` (its sender published
    /// over its share), `originOverRate` (relayed over the origin's share),
    /// `noVerifier`, `relayOff`, `tooManyTopics`, `sinkRefused`.
    public var rejected: [String: Int] = [:]
    /// Messages not forwarded because the relay admission refused them.
    public var relayRefused = 0
    /// Neighbours penalised, by reason: `badSignature` and `flooding` (pruned from
    /// every mesh and ignored for the backoff); `graftInBackoff` (a GRAFT during the
    /// backoff, answered with PRUNE and only counted).
    public var peersPenalised: [String: Int] = [:]
    /// GRAFTs sent and received.
    public var graftsSent = 0
    /// GRAFTs received.
    public var graftsReceived = 0
    /// PRUNEs sent.
    public var prunesSent = 0
    /// PRUNEs received.
    public var prunesReceived = 0
    /// IHAVE frames sent.
    public var ihavesSent = 0
    /// Message IDs asked for with IWANT.
    public var iwantRequested = 0
    /// Messages served in answer to IWANT.
    public var iwantServed = 0
    /// Topic frames dropped from a full link outbox.
    public var outboxDropped = 0

    /// Zero counters.
    public init() {}
}

/// One topic as this node sees it (``Router/topics()``).
public struct TopicSnapshot: Sendable, Hashable, Codable {
    /// The topic's name.
    public var topic: String
    /// Whether this node is subscribed (its messages land in the inbox).
    public var subscribed: Bool
    /// Whether this node takes part in the topic's mesh (subscribed, or relaying for
    /// subscribers within `maxDistance` hops).
    public var relaying: Bool
    /// Hops to the nearest subscriber (0 when subscribed); nil when none is known.
    public var distance: Int?
    /// The neighbours in this node's mesh for the topic.
    public var mesh: [PeerID]
    /// Every neighbour that announced the topic.
    public var peers: [PeerID]
    /// Messages of the topic in the cache now.
    public var cached: Int

    /// Creates a snapshot.
    public init(
        topic: String,
        subscribed: Bool,
        relaying: Bool,
        distance: Int?,
        mesh: [PeerID],
        peers: [PeerID],
        cached: Int
    ) {
        self.topic = topic
        self.subscribed = subscribed
        self.relaying = relaying
        self.distance = distance
        self.mesh = mesh
        self.peers = peers
        self.cached = cached
    }
}
