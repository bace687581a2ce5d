/// How the topic gossip behaves: the mesh degree, the heartbeat, lazy repair, limits
/// and the default subscriptions. The defaults follow libp2p gossipsub v1.1
/// (D = 6, D_low = 4, D_high = 12, D_lazy = 6, a 1-second heartbeat, IHAVE over the
/// last 3 heartbeats).
public struct TopicConfiguration: Sendable, Hashable {
    /// The topics this node subscribes to unless the user unsubscribed them
    /// (`topics.default`).
    public var defaultTopics: [String]
    /// The number of mesh peers per topic the heartbeat aims for (D).
    public var meshDegree: Int
    /// Fewer mesh peers than this and the heartbeat grafts more (D_low).
    public var meshDegreeLow: Int
    /// More mesh peers than this and the heartbeat prunes down to D (D_high); GRAFTs
    /// beyond it are answered with PRUNE.
    public var meshDegreeHigh: Int
    /// Peers outside the mesh that get an IHAVE each heartbeat (D_lazy).
    public var gossipDegree: Int
    /// Time between heartbeats (mesh upkeep, IHAVE gossip, expiry).
    public var heartbeatInterval: Duration
    /// Heartbeats of recent messages that each IHAVE advertises.
    public var gossipWindow: Int
    /// Whether the heartbeat's IHAVE also goes to the mesh peers (true), not only to
    /// D_lazy neighbours outside the mesh (gossipsub's rule, false). Pushes are not
    /// acknowledged: on a lossy link a mesh peer whose push was lost is otherwise
    /// repaired only by another neighbour.
    public var gossipToMesh: Bool
    /// How long an IWANT stays outstanding: the ID is not asked for again (of any
    /// neighbour) before then.
    public var iwantTimeout: Duration
    /// Times each SUBSCRIBE / UNSUBSCRIBE is repeated, one a heartbeat, after it is
    /// first sent (control frames are not acknowledged; 0: never repeated).
    public var announceRepeats: Int
    /// How long a message stays in the cache that IWANT is served from (and that a
    /// peer newly interested in its topic is offered with IHAVE).
    public var cacheDuration: Duration
    /// The most messages in that cache.
    public var cacheCapacity: Int
    /// Hops a new message may take (`topics.ttl`).
    public var ttl: UInt8
    /// Seconds a new message lives (`topics.lifetime_seconds`).
    public var lifetimeSeconds: UInt32
    /// Message IDs remembered to drop duplicates (in memory; a ``TopicStore`` keeps
    /// them across restarts).
    public var seenCapacity: Int
    /// Hops from a subscriber beyond which a node stops relaying a topic (and the
    /// largest distance a subscription announcement carries).
    public var maxDistance: UInt8
    /// The most topics this node takes part in (its own and relayed ones); more
    /// announced by neighbours are ignored.
    public var maxTopics: Int
    /// Messages a second one origin may publish on one topic (after `peerBurst`);
    /// more are dropped, and a neighbour publishing more itself is pruned and ignored
    /// for the backoff (`topics.peer_rate`).
    public var peerRate: Double
    /// Messages one origin may publish on one topic at once.
    public var peerBurst: Int
    /// How long a pruned neighbour may not be grafted again, and how long a penalised
    /// one is ignored.
    public var pruneBackoff: Duration
    /// Topic frames waiting per link; beyond it the oldest go (lazy repair fetches
    /// what was lost).
    public var outboxCapacity: Int
    /// Control frames (SUBSCRIBE, UNSUBSCRIBE, GRAFT, PRUNE, IHAVE, IWANT) a second one
    /// neighbour may send, after `controlBurst`; a neighbour sending more is pruned
    /// from every topic mesh and ignored for the backoff (docs/PROTOCOL.md §A.7).
    public var controlRate: Double
    /// Control frames one neighbour may send at once: enough for a full exchange on
    /// link-up (a SUBSCRIBE per topic, IHAVE of the whole cache).
    public var controlBurst: Int

    /// The seed app's topics, subscribed by default.
    public static let seedTopics = ["/scmesh/global/v1", "/scmesh/discovery/v1", "/scmesh/relay/v1"]

    /// Creates a configuration; every parameter has the gossipsub-like default.
    public init(
        defaultTopics: [String] = TopicConfiguration.seedTopics,
        meshDegree: Int = 6,
        meshDegreeLow: Int = 4,
        meshDegreeHigh: Int = 12,
        gossipDegree: Int = 6,
        heartbeatInterval: Duration = .seconds(1),
        gossipWindow: Int = 3,
        gossipToMesh: Bool = true,
        iwantTimeout: Duration = .seconds(1),
        announceRepeats: Int = 2,
        cacheDuration: Duration = .seconds(120),
        cacheCapacity: Int = 4096,
        ttl: UInt8 = 64,
        lifetimeSeconds: UInt32 = 3600,
        seenCapacity: Int = 65_536,
        maxDistance: UInt8 = 8,
        maxTopics: Int = 64,
        peerRate: Double = 50,
        peerBurst: Int = 200,
        pruneBackoff: Duration = .seconds(60),
        outboxCapacity: Int = 1024,
        controlRate: Double = 100,
        controlBurst: Int = 1000
    ) {
        self.defaultTopics = defaultTopics
        self.meshDegree = meshDegree
        self.meshDegreeLow = meshDegreeLow
        self.meshDegreeHigh = meshDegreeHigh
        self.gossipDegree = gossipDegree
        self.heartbeatInterval = heartbeatInterval
        self.gossipWindow = gossipWindow
        self.gossipToMesh = gossipToMesh
        self.iwantTimeout = iwantTimeout
        self.announceRepeats = announceRepeats
        self.cacheDuration = cacheDuration
        self.cacheCapacity = cacheCapacity
        self.ttl = ttl
        self.lifetimeSeconds = lifetimeSeconds
        self.seenCapacity = seenCapacity
        self.maxDistance = maxDistance
        self.maxTopics = maxTopics
        self.peerRate = peerRate
        self.peerBurst = peerBurst
        self.pruneBackoff = pruneBackoff
        self.outboxCapacity = outboxCapacity
        self.controlRate = controlRate
        self.controlBurst = controlBurst
    }

    /// Checks every value.
    /// - Throws: ``MeshError`` `.invalidConfiguration` naming the key and what to do.
    public func validate() throws(MeshError) {
        for topic in defaultTopics {
            if let problem = TopicName.problem(with: topic) {
                throw MeshError(.invalidConfiguration, "topics.default: \(problem)")
            }
        }
        guard meshDegreeLow >= 1, meshDegreeLow <= meshDegree, meshDegree <= meshDegreeHigh else {
            throw MeshError(
                .invalidConfiguration,
                "topics: mesh degrees must satisfy 1 <= low (\(meshDegreeLow)) <= degree (\(meshDegree)) <= high (\(meshDegreeHigh))"
            )
        }
        guard ttl >= 1 else { throw MeshError(.invalidConfiguration, "topics.ttl must be at least 1 hop") }
        guard lifetimeSeconds >= 1 else {
            throw MeshError(.invalidConfiguration, "topics.lifetime_seconds must be at least 1")
        }
        guard peerRate > 0, peerBurst >= 1 else {
            throw MeshError(
                .invalidConfiguration,
                "topics.peer_rate must be above 0 (messages a second per neighbour and topic)"
            )
        }
        guard controlRate > 0, controlBurst >= 1 else {
            throw MeshError(.invalidConfiguration, "topics: the control frame rate and burst must be positive")
        }
        guard heartbeatInterval > .zero, gossipWindow >= 1, cacheCapacity >= 1, seenCapacity >= 1, maxTopics >= 1,
            outboxCapacity >= 1, maxDistance >= 1, iwantTimeout > .zero, announceRepeats >= 0
        else {
            throw MeshError(
                .invalidConfiguration,
                "topics: heartbeat, window, capacities, distance and IWANT timeout must be positive, announcement repeats ≥ 0"
            )
        }
    }
}
