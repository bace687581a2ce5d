import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// Emergency broadcasts (docs/PROTOCOL.md §A.10): a signed message on the emergency
/// topic, which every node hears without subscribing, marked an emergency in every
/// inbox, within `flood.emergency_per_hour` per origin at the origin and at every
/// relay; forgeries spend nothing.
@Suite struct EmergencyBroadcastTests {
    static func line(perHour: @escaping (Int) -> Int) async throws -> RouterGraph {
        let graph = await RouterGraph.topics(
            count: 3,
            edges: [(0, 1), (1, 2)],
            flood: { FloodConfiguration(emergencyPerHour: perHour($0)) }
        )
        try await graph.waitForLinks()
        try await graph.waitForMesh(TopicName.emergency)
        return graph
    }

    @Test("a broadcast reaches every node, two hops away too, marked an emergency", .timeLimit(.minutes(3)))
    func reachesEveryNode() async throws {
        let graph = try await Self.line { _ in 10 }
        defer { Task { await graph.stop() } }
        let id = try await graph[0].publish(Array("fire in building B".utf8), to: TopicName.emergency)
        for index in [1, 2] {
            try await graph.waitUntil("T\(index) has the broadcast") {
                graph.received(at: index).contains { $0.id == id }
            }
            let message = try #require(graph.received(at: index).first { $0.id == id })
            #expect(message.emergency && message.topic == TopicName.emergency && message.from == graph[0].localPeerID)
        }
        await #expect(throws: MeshError.self) { try await graph[1].unsubscribe(from: TopicName.emergency) }
    }

    @Test(
        "the origin's own limit refuses at once; a relay passes on at most its per-origin limit",
        .timeLimit(.minutes(3))
    )
    func limits() async throws {
        // T0 may send 3 an hour; T1, the relay, takes at most 2 of one origin an hour.
        let graph = try await Self.line { $0 == 1 ? 2 : 3 }
        defer { Task { await graph.stop() } }
        var sent: [MessageID] = []
        for n in 0..<3 { sent.append(try await graph[0].publish(Array("alarm \(n)".utf8), to: TopicName.emergency)) }
        do {
            _ = try await graph[0].publish(Array("one too many".utf8), to: TopicName.emergency)
            Issue.record("a fourth emergency broadcast within the hour was sent")
        } catch let error as MeshError {
            #expect(error.code == .rateLimited)
        }
        try await graph.waitUntil("T2 has two broadcasts") { graph.received(at: 2).count >= 2 }
        // T1 refused the third: T1 and T2 see the first two only, and T1 counted why.
        try await graph.waitUntil("T1 refused the third") {
            await graph[1].stats().topics.rejected["emergencyOrigin"] == 1
        }
        #expect(graph.received(at: 1).map(\.id) == Array(sent.prefix(2)))
        #expect(graph.received(at: 2).map(\.id) == Array(sent.prefix(2)))
    }

    @Test("forged broadcasts in an origin's name are dropped and spend none of its budget", .timeLimit(.minutes(3)))
    func forgeriesSpendNothing() async throws {
        let graph = await RouterGraph.topics(
            count: 2,
            edges: [(0, 1)],
            flood: { _ in FloodConfiguration(emergencyPerHour: 1) }
        )
        defer { Task { await graph.stop() } }
        try await graph.waitForLinks()
        try await graph.waitForMesh(TopicName.emergency)
        let m = PeerID.random()
        let transport = LoopbackTransport(
            name: "lo",
            address: "M",
            network: graph.network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(transport, localPeerID: m)
        defer { Task { await running.stop() } }
        var peer = RawPeer(link: try await transport.dial(PeerHint(transport: "lo", address: RouterGraph.address(1))))
        try await peer.sendPlaintextHello(as: m)
        _ = try #require(try await peer.link.receive())
        let origin = graph[0].localPeerID
        for _ in 0..<3 {
            let forged = TopicMessageFrame(
                id: .random(),
                origin: origin,
                ttl: 8,
                ageMillis: 0,
                lifetimeSeconds: 3600,
                topic: TopicName.emergency,
                payload: Array("evacuate now".utf8),
                signature: Array(repeating: 7, count: 64)
            )
            try await peer.send(.topicMessage(forged))
        }
        try await peer.send(.ping(nonce: 9))
        #expect(try await peer.next { if case .pong(9) = $0 { true } else { nil } } == true)
        #expect(graph.received(at: 1).isEmpty)
        // The first forgery is refused for its signature; its sender is then ignored.
        let rejected = await graph[1].stats().topics.rejected
        #expect(rejected["badSignature"] == 1 && rejected["ignoredPeer"] == 2, "\(rejected)")
        // The genuine origin's one broadcast an hour still gets through.
        let id = try await graph[0].publish(Array("real alarm".utf8), to: TopicName.emergency)
        try await graph.waitUntil("T1 has the genuine broadcast") { graph.received(at: 1).contains { $0.id == id } }
        #expect(graph.received(at: 1).allSatisfy { $0.emergency })
    }
}
