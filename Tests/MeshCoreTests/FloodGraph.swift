import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// A seeded random source (SplitMix64): a test run can be repeated.
final class SeededRandom: MeshRandom {
    private let state: Mutex<UInt64>

    init(seed: UInt64) { state = Mutex(seed) }

    func unit() -> Double {
        let value = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Double(value >> 11) / Double(1 << 53)
    }
}

/// Routers N0…N(n−1) over loopback links along the given edges, each with a signer and
/// a sealer, and an inbox collector per router. Routing announces neighbours only
/// (`max_hops` 1), so no node has a route to a node two hops away: messages to those
/// can only be flooded.
final class FloodGraph: Sendable {
    let network = LoopbackNetwork()
    let routers: [Router]
    let edges: [(Int, Int)]
    private let inboxes: Inboxes
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(count: Int, edges: [(Int, Int)], flood: FloodConfiguration, seed: UInt64 = 1) async {
        var logger = Logger(label: "flood-graph")
        logger.logLevel = .warning
        var routers: [Router] = []
        for index in 0..<count {
            let id = PeerID.random()
            let configuration = RouterConfiguration(
                reconnect: ReconnectConfiguration(
                    initialDelay: .milliseconds(20),
                    maxDelay: .milliseconds(200),
                    jitter: 0.2
                ),
                routing: RoutingConfiguration(maxHops: 1),
                flood: flood
            )
            let router = Router(
                security: PlaintextLinkSecurity(localPeerID: id),
                configuration: configuration,
                sealer: TestSealer(peer: id),
                receipts: TestReceiptSigner(peer: id),
                random: SeededRandom(seed: seed &+ UInt64(index)),
                logger: logger
            )
            await router.add(
                LoopbackTransport(
                    name: "lo",
                    address: "G\(index)",
                    network: network,
                    configuration: .init(discovery: false)
                ),
                priority: 10
            )
            routers.append(router)
        }
        self.routers = routers
        self.edges = edges
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
            await routers[max(a, b)].connect(to: PeerHint(transport: "lo", address: "G\(min(a, b))"))
        }
    }

    subscript(index: Int) -> Router { routers[index] }

    func received(at index: Int) -> [InboundMessage] { inboxes.messages.withLock { $0[index] } }

    /// Polls `condition` until it holds, for at most `seconds`.
    func waitUntil(_ what: String, seconds: Double = hangGuardSeconds, _ condition: () async -> Bool) async throws {
        try await TestSupport.waitUntil(what, seconds: seconds, condition)
    }

    /// Waits until every edge has a live link.
    func waitForLinks() async throws {
        for (a, b) in edges {
            let peer = routers[b].localPeerID
            try await waitUntil("G\(a) is linked to G\(b)") { await routers[a].peers().contains { $0.peer == peer } }
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
    static func line(_ count: Int) -> [(Int, Int)] { (1..<count).map { ($0 - 1, $0) } }

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
}
