import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Routers N0…N(n−1) over loopback links along `edges` (the higher index dials the
/// lower, once both transports run), on one clock, each with a receipt signer and an
/// inbox collector. The test suites' one multi-router harness:
///
/// - ``line(count:relayOff:clock:routing:keepalive:)``: a line with sealers;
/// - ``flood(count:edges:flood:seed:)``: routes to neighbours only, so what is further
///   away can only be flooded;
/// - ``topics(count:edges:clock:signers:topics:transport:features:flood:)``: no
///   sealers and no default topics, on a manual clock.
final class RouterGraph: Sendable {
    let network: LoopbackNetwork
    let routers: [Router]
    let edges: [(Int, Int)]
    /// The clock the routers run on.
    let clock: any MeshClock
    /// How far ``waitForLinks()`` moves a manual clock between polls (nil: not at all).
    private let linkStep: Duration?
    private let inboxes: Inboxes
    private let tasks = Mutex<[Task<Void, Never>]>([])

    /// Starts `routers` (each already given a loopback transport on `network` at
    /// ``address(_:)``) and links them along `edges`.
    private init(
        network: LoopbackNetwork,
        routers: [Router],
        edges: [(Int, Int)],
        clock: any MeshClock,
        linkStep: Duration? = nil
    ) async {
        self.network = network
        self.routers = routers
        self.edges = edges
        self.clock = clock
        self.linkStep = linkStep
        inboxes = Inboxes(count: routers.count)
        for (index, router) in routers.enumerated() {
            let inboxes = self.inboxes
            tasks.withLock {
                $0.append(Task { try? await router.run() })
                $0.append(
                    Task {
                        while let message = await router.incoming.receive() {
                            inboxes.messages.withLock { $0[index].append(message) }
                        }
                    }
                )
            }
        }
        // Dial only once every transport runs: a dial that fails first is retried on the
        // router's clock, which a test's ManualClock may never move. (A transport that
        // never runs shows as a missing link in ``waitForLinks()``.)
        for (index, router) in routers.enumerated() {
            try? await TestSupport.waitUntil("N\(index)'s loopback transport runs", seconds: 10) {
                await router.transportStatus().first?.state == .running
            }
        }
        for (a, b) in edges {
            await routers[max(a, b)].connect(to: PeerHint(transport: "lo", address: Self.address(min(a, b))))
        }
    }

    /// One router with a loopback transport at ``address(_:)`` on `network`.
    private static func router(
        _ index: Int,
        network: LoopbackNetwork,
        configuration: RouterConfiguration,
        sealed: Bool,
        signer: (any ReceiptSigner)? = nil,
        clock: any MeshClock,
        topics: TopicConfiguration = .init(),
        random: (any MeshRandom)? = nil,
        transport: (LoopbackTransport) -> any Transport = { $0 }
    ) async -> Router {
        var logger = Logger(label: "router-graph")
        logger.logLevel = .warning
        let id = PeerID.random()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: id),
            configuration: configuration,
            sealer: sealed ? StandInSealer(peer: id) : nil,
            receipts: signer ?? TestReceiptSigner(peer: id),
            clock: clock,
            topics: topics,
            random: random,
            logger: logger
        )
        let loopback = LoopbackTransport(
            name: "lo",
            address: address(index),
            network: network,
            configuration: .init(discovery: false)
        )
        await router.add(transport(loopback), priority: 10)
        return router
    }

    /// Quick reconnects, so a test does not wait for a link that dropped.
    private static func reconnect(jitter: Double) -> ReconnectConfiguration {
        ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200), jitter: jitter)
    }

    /// A line N0 – N1 – … (each dialling its left neighbour), with sealers; routers
    /// in `relayOff` relay nothing.
    static func line(
        count: Int,
        relayOff: Set<Int> = [],
        clock: any MeshClock = SystemClock(),
        routing: RoutingConfiguration = .init(),
        keepalive: Duration = .seconds(30)
    ) async -> RouterGraph {
        let network = LoopbackNetwork()
        var routers: [Router] = []
        for index in 0..<count {
            let configuration = RouterConfiguration(
                relayEnabled: !relayOff.contains(index),
                reconnect: reconnect(jitter: 0.2),
                keepaliveInterval: keepalive,
                routing: routing
            )
            routers.append(
                await router(index, network: network, configuration: configuration, sealed: true, clock: clock)
            )
        }
        return await RouterGraph(network: network, routers: routers, edges: lineEdges(count), clock: clock)
    }

    /// Routers along `edges` with sealers that announce neighbours only (`max_hops`
    /// 1): no node has a route to a node two hops away, so messages to those can only
    /// be flooded. `seed` seeds each router's random source.
    static func flood(count: Int, edges: [(Int, Int)], flood: FloodConfiguration, seed: UInt64 = 1) async -> RouterGraph
    {
        let network = LoopbackNetwork()
        let clock = SystemClock()
        var routers: [Router] = []
        for index in 0..<count {
            let configuration = RouterConfiguration(
                reconnect: reconnect(jitter: 0.2),
                routing: RoutingConfiguration(maxHops: 1),
                flood: flood
            )
            routers.append(
                await router(
                    index,
                    network: network,
                    configuration: configuration,
                    sealed: true,
                    clock: clock,
                    random: SeededRandom(seed: seed &+ UInt64(index))
                )
            )
        }
        return await RouterGraph(network: network, routers: routers, edges: edges, clock: clock)
    }

    /// Routers along `edges` without sealers, on `clock`, subscribed to no topic by
    /// default.
    /// - Parameters:
    ///   - signers: a signer per index to use instead of the honest test signer.
    ///   - topics: the topic settings per index (default: no default topics).
    ///   - transport: wraps each index's loopback transport (default: none).
    ///   - features: the capabilities each index announces (default: all).
    ///   - flood: the flooding settings per index (default: the defaults).
    static func topics(
        count: Int,
        edges: [(Int, Int)],
        clock: ManualClock = ManualClock(),
        signers: [Int: any ReceiptSigner] = [:],
        topics: (Int) -> TopicConfiguration = { _ in TopicConfiguration(defaultTopics: []) },
        transport: (Int, LoopbackTransport) -> any Transport = { $1 },
        features: (Int) -> Capabilities = { _ in .all },
        flood: (Int) -> FloodConfiguration = { _ in RouterConfiguration().flood }
    ) async -> RouterGraph {
        let network = LoopbackNetwork()
        var routers: [Router] = []
        for index in 0..<count {
            var configuration = RouterConfiguration(reconnect: reconnect(jitter: 0), keepaliveInterval: .seconds(30))
            configuration.features = features(index)
            configuration.flood = flood(index)
            routers.append(
                await router(
                    index,
                    network: network,
                    configuration: configuration,
                    sealed: false,
                    signer: signers[index],
                    clock: clock,
                    topics: topics(index),
                    transport: { transport(index, $0) }
                )
            )
        }
        return await RouterGraph(
            network: network,
            routers: routers,
            edges: edges,
            clock: clock,
            linkStep: .milliseconds(20)
        )
    }

    /// The clock as a ``ManualClock`` (a ``topics`` graph's, or a line given one).
    var manualClock: ManualClock {
        guard let manual = clock as? ManualClock else { preconditionFailure("this graph runs on the system clock") }
        return manual
    }

    /// Router `index`'s loopback address.
    static func address(_ index: Int) -> String { "N\(index)" }

    subscript(index: Int) -> Router { routers[index] }

    /// The messages router `index` received.
    func received(at index: Int) -> [InboundMessage] { inboxes.messages.withLock { $0[index] } }

    /// The indices linked to `index` by an edge.
    func neighbours(of index: Int) -> [Int] {
        edges.compactMap { $0.0 == index ? $0.1 : $0.1 == index ? $0.0 : nil }
    }

    /// Polls `condition` until it holds, for at most `seconds`; `advancing` moves the
    /// graph's ``ManualClock`` by that much between polls.
    func waitUntil(
        _ what: String,
        seconds: Double = hangGuardSeconds,
        advancing step: Duration? = nil,
        _ condition: () async -> Bool
    ) async throws {
        guard let step, let manual = clock as? ManualClock else {
            return try await TestSupport.waitUntil(what, seconds: seconds, condition)
        }
        try await TestSupport.waitUntil(what, seconds: seconds) {
            if await condition() { return true }
            manual.advance(by: step)
            return false
        }
    }

    /// Waits until every edge has a live link (moving the clock of a ``topics`` graph).
    func waitForLinks() async throws {
        for (a, b) in edges {
            let peer = routers[b].localPeerID
            try await waitUntil("N\(a) is linked to N\(b)", advancing: linkStep) {
                await routers[a].peers().contains { $0.peer == peer }
            }
        }
    }

    /// Waits until router `index` has a route to router `target` (of `hops` hops).
    func waitForRoute(from index: Int, to target: Int, hops: Int? = nil) async throws {
        let destination = routers[target].localPeerID
        try await waitUntil("N\(index) has a route to N\(target)") {
            guard let route = await routers[index].routes().first(where: { $0.destination == destination }) else {
                return false
            }
            return hops.map { route.hops == $0 } ?? true
        }
    }

    /// Waits until every router's mesh for `topic` holds all its neighbours (at least
    /// `degree` of them).
    func waitForMesh(_ topic: String, degree: Int = 4) async throws {
        for index in routers.indices {
            let expected = neighbours(of: index).count
            try await waitUntil("N\(index)'s mesh for \(topic) is complete") {
                guard let snapshot = await routers[index].topics().first(where: { $0.topic == topic }) else {
                    return false
                }
                return snapshot.peers.count == expected && snapshot.mesh.count >= min(expected, degree)
            }
        }
    }

    /// The sum of a counter over every router.
    func total(_ counter: (RouterStats) -> Int) async -> Int {
        var sum = 0
        for router in routers { sum += counter(await router.stats()) }
        return sum
    }

    func stop() async {
        for router in routers { await router.shutdown() }
        for task in tasks.withLock({ $0 }) { await task.value }
    }

    /// A line 0 – 1 – … – (n−1).
    static func lineEdges(_ count: Int) -> [(Int, Int)] { (1..<max(count, 1)).map { ($0 - 1, $0) } }

    /// A `columns` × `rows` grid with both diagonals in every cell (each inner node has
    /// 8 neighbours): dense, and node 0 and the last node are far apart.
    static func denseGrid(columns: Int, rows: Int) -> [(Int, Int)] {
        var edges: [(Int, Int)] = []
        func node(_ x: Int, _ y: Int) -> Int { y * columns + x }
        for y in 0..<rows {
            for x in 0..<columns {
                if x + 1 < columns { edges.append((node(x, y), node(x + 1, y))) }
                if y + 1 < rows { edges.append((node(x, y), node(x, y + 1))) }
                if x + 1 < columns, y + 1 < rows {
                    edges.append((node(x, y), node(x + 1, y + 1)))
                    edges.append((node(x + 1, y), node(x, y + 1)))
                }
            }
        }
        return edges
    }

    /// A random connected graph: a random tree, then `extra` more edges.
    static func randomEdges(count: Int, extra: Int, seed: UInt64) -> [(Int, Int)] {
        var generator = SeededGenerator(seed: seed)
        var edges = Set<[Int]>()
        for node in 1..<count {
            let parent = Int(generator.next() % UInt64(node))
            edges.insert([parent, node])
        }
        while edges.count < count - 1 + extra {
            let a = Int(generator.next() % UInt64(count))
            let b = Int(generator.next() % UInt64(count))
            if a != b { edges.insert([min(a, b), max(a, b)]) }
        }
        return edges.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }.map { ($0[0], $0[1]) }
    }
}

/// Each router's received messages.
final class Inboxes: Sendable {
    let messages: Mutex<[[InboundMessage]]>

    init(count: Int) {
        messages = Mutex(Array(repeating: [], count: count))
    }
}
