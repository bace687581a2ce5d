import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Routers T0…T(n−1) over loopback links along the given edges (the higher index
/// dials the lower), all on one ``ManualClock``, each with a signer and an inbox
/// collector, subscribed to no topic by default.
final class TopicGraph: Sendable {
    let network = LoopbackNetwork()
    let clock = ManualClock()
    let routers: [Router]
    let edges: [(Int, Int)]
    private let inboxes: Inboxes
    private let tasks = Mutex<[Task<Void, Never>]>([])

    /// - Parameters:
    ///   - signers: a signer per index to use instead of the honest test signer.
    ///   - topics: the topic settings per index (default: no default topics).
    ///   - transport: wraps each index's loopback transport (default: none).
    ///   - features: the capabilities each index announces (default: all).
    ///   - flood: the flooding settings per index (default: the defaults).
    init(
        count: Int,
        edges: [(Int, Int)],
        signers: [Int: any ReceiptSigner] = [:],
        topics: (Int) -> TopicConfiguration = { _ in TopicConfiguration(defaultTopics: []) },
        transport: (Int, LoopbackTransport) -> any Transport = { $1 },
        features: (Int) -> Capabilities = { _ in .all },
        flood: (Int) -> FloodConfiguration = { _ in RouterConfiguration().flood }
    ) async {
        self.edges = edges
        var logger = Logger(label: "topic-graph")
        logger.logLevel = .warning
        var routers: [Router] = []
        for index in 0..<count {
            let id = PeerID.random()
            var configuration = RouterConfiguration(
                reconnect: ReconnectConfiguration(
                    initialDelay: .milliseconds(20),
                    maxDelay: .milliseconds(200),
                    jitter: 0
                ),
                keepaliveInterval: .seconds(30)
            )
            configuration.features = features(index)
            configuration.flood = flood(index)
            let router = Router(
                security: PlaintextLinkSecurity(localPeerID: id),
                configuration: configuration,
                receipts: signers[index] ?? TestReceiptSigner(peer: id),
                clock: clock,
                topics: topics(index),
                logger: logger
            )
            let loopback = LoopbackTransport(
                name: "lo",
                address: Self.address(index),
                network: network,
                configuration: .init(discovery: false)
            )
            await router.add(transport(index, loopback), priority: 10)
            routers.append(router)
        }
        self.routers = routers
        inboxes = Inboxes(count: count)
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
        for (a, b) in edges {
            let (low, high) = (min(a, b), max(a, b))
            await routers[high].connect(to: PeerHint(transport: "lo", address: Self.address(low)))
        }
    }

    /// A connected random graph: a random spanning tree plus `extra` random edges,
    /// from a seeded generator.
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

    static func address(_ index: Int) -> String { "T\(index)" }

    subscript(index: Int) -> Router { routers[index] }

    /// The neighbours of `index` in the graph.
    func neighbours(of index: Int) -> [Int] {
        edges.compactMap { $0.0 == index ? $0.1 : $0.1 == index ? $0.0 : nil }
    }

    /// The messages router `index` received.
    func received(at index: Int) -> [InboundMessage] { inboxes.messages.withLock { $0[index] } }

    /// Polls `condition` every 10 ms of real time (the clock stands still unless
    /// `advancing` is given: then it moves that much per poll), up to `seconds`.
    func waitUntil(
        _ what: String,
        seconds: Int = 60,
        advancing step: Duration? = nil,
        _ condition: () async -> Bool
    ) async throws {
        for _ in 0..<(seconds * 100) {
            if await condition() { return }
            if let step { clock.advance(by: step) }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting until \(what)")
        throw CancellationError()
    }

    /// Waits until every edge has a live link.
    func waitForLinks() async throws {
        for (a, b) in edges {
            let peer = routers[b].localPeerID
            try await waitUntil("T\(a) is linked to T\(b)", advancing: .milliseconds(20)) {
                await routers[a].peers().contains { $0.peer == peer }
            }
        }
    }

    /// Waits until every router takes part in `topic` with every neighbour announcing
    /// it, and its mesh holds at least D_low (`degree`) peers, or all its neighbours
    /// when it has fewer. (Not D: a mesh between D_low and D_high is complete in
    /// gossipsub's terms — a node whose GRAFTs met full meshes, pruned at D_high, can
    /// settle at 5 of 6, and the heartbeat grafts only below D_low.)
    func waitForMesh(_ topic: String, degree: Int = 4) async throws {
        for index in routers.indices {
            let expected = neighbours(of: index).count
            try await waitUntil("T\(index)'s mesh for \(topic) is complete") {
                guard let snapshot = await routers[index].topics().first(where: { $0.topic == topic }) else {
                    return false
                }
                return snapshot.peers.count == expected && snapshot.mesh.count >= min(expected, degree)
            }
        }
    }

    func stop() async {
        for router in routers { await router.shutdown() }
        for task in tasks.withLock({ $0 }) { await task.value }
    }
}

/// SplitMix64, for reproducible graphs.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
