import MeshCore

/// What one ``MeshSimulation`` run looks like: the graph, the loss, the traffic and
/// the disturbances.
public struct SimulationConfiguration: Sendable {
    /// Routers in the mesh.
    public var nodes: Int
    /// Seeds the graph, the traffic, the choice of partitioned and churned nodes and
    /// the loss draws.
    public var seed: UInt64
    /// Probability (0…1) that a frame written to a link (all its packets) is lost.
    public var loss: Double
    /// Messages sent in all (random source–destination pairs): half once routes are
    /// learned (the steady phase, on which transmissions are measured), a quarter
    /// during a partition, a quarter while some nodes are down.
    public var messages: Int
    /// The mean degree the graph's radius aims at.
    public var targetDegree: Double
    /// The share of nodes cut off (a disc around a random point) during the partition.
    public var partitionShare: Double
    /// How long the partition lasts (virtual time).
    public var partitionDuration: Duration
    /// The share of nodes stopped and restarted (with their outbound queues).
    public var churnShare: Double
    /// How long churned nodes stay down (virtual time).
    public var churnDowntime: Duration
    /// Nominal bitrate the links report (the announcement budget is a share of it).
    public var linkBitrate: Int
    /// The longest the run waits for routes to converge (virtual time).
    public var convergenceLimit: Duration
    /// Whether the steady phase waits, after 99.5 % of the routes are known, until the
    /// routes stop changing (in every look, 10 s apart, over a route summary interval
    /// and 10 s more, at most 0.1 % of the possible routes appear, go, or change next hop
    /// or hops; within ``convergenceLimit``): routes still improving are the table's
    /// building, not the running mesh's cost. false starts at the 99.5 % mark.
    public var waitForSettledRoutes = true
    /// The longest the run waits for every message after the steady phase, and again
    /// at the end (virtual time).
    public var settleLimit: Duration
    /// The smallest step virtual time takes when the network is idle.
    public var quantum: Duration
    /// Topic messages published in the topic phase at the end (0: no topic phase).
    public var topicMessages: Int
    /// The share of nodes subscribed to the topic.
    public var topicShare: Double
    /// The routers' configuration (a loss-free, signed, sealed mesh by default).
    public var router: RouterConfiguration
    /// The routers' topic settings (default: the library's, the seed topics
    /// subscribed).
    public var topics = TopicConfiguration()
    /// Whether route announcements span the graph (``MeshSimulation`` raises
    /// `routing.max_hops` to the diameter + 4), or reach direct neighbours only
    /// (`max_hops` 1). Neighbours-only is for a topic-only run
    /// (``MeshSimulation/runTopicsOnly(settle:)``): the topic gossip uses no routes,
    /// and at 1000 nodes converging a million routes is most of the run's work.
    /// Routed messages need routes across the mesh.
    public var routesAcrossMesh = true
    /// Whether each node keeps its own announcements' sequences across a restart (an
    /// ``InMemoryAnnounceStateStore`` per node, as the node's store keeps them): a
    /// restarted router then repeats the sequence the mesh holds instead of announcing
    /// a new one (docs/PROTOCOL.md §A.5, "Restarting").
    public var keepAnnounceState = true
    /// Whether routers keep their route table across restarts (an
    /// ``InMemoryRouteTableStore`` per node, as the node's store keeps it): a restarted
    /// router then starts with the routes it had, dormant until their neighbours link,
    /// instead of an empty table its neighbours refill (docs/PROTOCOL.md §A.5,
    /// "Restarting").
    public var keepRouteTable = true
    /// Relays that lie about hop counts: the `liars` best-connected nodes rewrite the
    /// hop count of every ANNOUNCE they send (``lie``). The hop count is not signed, so
    /// their neighbours take the lie; the liars are neither source nor destination of
    /// the run's messages, so the delivery figures are the rest of the mesh's.
    public var liars = 0
    /// What the ``liars`` claim.
    public var lie = HopLie.shorter

    /// A lying relay's hop counts.
    public enum HopLie: Sendable, CaseIterable {
        /// Every route 1 hop long: it draws its neighbours' traffic.
        case shorter
        /// Every route 3 hops longer than it is: its neighbours route around it.
        case longer
        /// Shorter and longer in turn, announcement by announcement.
        case flapping
    }
    /// The optional protocol features of each node: node *i* gets entry *i* mod the
    /// count (``RouterConfiguration/features``); empty: every node has the router's.
    /// A mixed mesh of minimal, full and partial nodes (docs/PROTOCOL.md §A.11).
    public var featureMix: [Capabilities] = []

    /// Defaults: 200 nodes, 10 % loss, 600 messages, mean degree 7, 10 % of the nodes
    /// partitioned for 60 s, 2 % down for 45 s, 1 Mbit/s links, a topic phase of 50
    /// messages to 10 % of the nodes, default router settings (``MeshSimulation`` raises `max_hops` and the TTL to span the graph).
    public init(
        nodes: Int = 200,
        seed: UInt64 = 1,
        loss: Double = 0.1,
        messages: Int = 600,
        targetDegree: Double = 7,
        partitionShare: Double = 0.1,
        partitionDuration: Duration = .seconds(60),
        churnShare: Double = 0.02,
        churnDowntime: Duration = .seconds(45),
        linkBitrate: Int = 1_000_000,
        convergenceLimit: Duration = .seconds(600),
        settleLimit: Duration = .seconds(300),
        quantum: Duration = .milliseconds(50),
        topicMessages: Int = 50,
        topicShare: Double = 0.1,
        router: RouterConfiguration = .init()
    ) {
        self.topicMessages = topicMessages
        self.topicShare = topicShare
        self.nodes = nodes
        self.seed = seed
        self.loss = loss
        self.messages = messages
        self.targetDegree = targetDegree
        self.partitionShare = partitionShare
        self.partitionDuration = partitionDuration
        self.churnShare = churnShare
        self.churnDowntime = churnDowntime
        self.linkBitrate = linkBitrate
        self.convergenceLimit = convergenceLimit
        self.settleLimit = settleLimit
        self.quantum = quantum
        self.router = router
    }

    /// Checks every value, naming the bad one.
    public func validate() throws(MeshError) {
        guard nodes >= 2 else { throw MeshError(.invalidConfiguration, "nodes: at least 2, got \(nodes)") }
        guard (0..<1).contains(loss) else {
            throw MeshError(.invalidConfiguration, "loss: must be in 0..<1, got \(loss)")
        }
        guard messages >= 1 else { throw MeshError(.invalidConfiguration, "messages: at least 1, got \(messages)") }
        guard targetDegree >= 1, targetDegree < Double(nodes) else {
            throw MeshError(.invalidConfiguration, "target degree: between 1 and nodes − 1, got \(targetDegree)")
        }
        guard topicMessages >= 0, topicShare > 0, topicShare <= 1 else {
            throw MeshError(
                .invalidConfiguration,
                "topics: messages ≥ 0 and a share in (0, 1], got \(topicMessages) and \(topicShare)"
            )
        }
        guard liars >= 0, liars <= nodes - 2 else {
            throw MeshError(.invalidConfiguration, "liars: between 0 and nodes − 2, got \(liars)")
        }
        guard (0..<1).contains(partitionShare), (0..<1).contains(churnShare) else {
            throw MeshError(
                .invalidConfiguration,
                "partition and churn shares: must be in 0..<1, got \(partitionShare) and \(churnShare)"
            )
        }
    }
}
