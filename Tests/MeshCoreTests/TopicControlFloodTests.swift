import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// Topic control frames (SUBSCRIBE, GRAFT, PRUNE, IHAVE, IWANT) from one neighbour are
/// held to `controlRate` / `controlBurst` (docs/PROTOCOL.md §A.7): a raw neighbour X
/// that floods IHAVE is pruned and ignored, stays ignored when it links again, and an
/// honest publisher's messages still arrive. The clock stands still during the flood,
/// so X's share is exactly the burst.
@Suite struct TopicControlFloodTests {
    static let topic = "/test/control/v1"

    @Test(.timeLimit(.minutes(3))) func aNeighbourFloodingControlFramesIsPrunedAndStaysIgnored() async throws {
        let burst = 30
        let graph = await RouterGraph.topics(count: 2, edges: [(0, 1)]) { _ in
            TopicConfiguration(defaultTopics: [], controlRate: 1, controlBurst: burst)
        }
        defer { Task { await graph.stop() } }
        for index in 0..<2 { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic)
        let receiver = graph[1]

        // X, by hand: linked to T1, announces the topic, then floods IHAVE.
        let x = PeerID.random()
        let transport = LoopbackTransport(
            name: "lo",
            address: "X",
            network: graph.network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(transport, localPeerID: x)
        defer { Task { await running.stop() } }
        func link() async throws -> RawPeer {
            let peer = RawPeer(
                link: try await transport.dial(PeerHint(transport: "lo", address: RouterGraph.address(1)))
            )
            try await peer.sendPlaintextHello(as: x)
            _ = try #require(try await peer.link.receive())  // T1's hello
            return peer
        }
        var peer = try await link()
        try await peer.send(.topicControl(TopicControlFrame(topic: Self.topic, body: .subscribe(distance: 0))))
        try await graph.waitUntil("T1 knows X is in the topic") {
            await receiver.topics().first { $0.topic == Self.topic }?.peers.contains(x) == true
        }
        for _ in 0..<(3 * burst) {
            try await peer.send(
                .topicControl(TopicControlFrame(topic: Self.topic, body: .ihave([.random(), .random()])))
            )
        }
        try await graph.waitUntil("T1 pruned X for flooding control frames") {
            await receiver.stats().topics.peersPenalised["controlFlood", default: 0] == 1
        }
        // One frame over the share is counted; the rest arrive while X is ignored.
        var stats = await receiver.stats()
        #expect(stats.topics.rejected["controlRateLimited"] == 1)
        var snapshot = try #require(await receiver.topics().first { $0.topic == Self.topic })
        #expect(!snapshot.peers.contains(x) && !snapshot.mesh.contains(x))

        // X links again and announces the topic: still ignored for the backoff.
        await peer.link.close()
        try await graph.waitUntil("T1 saw X's link go") { await !receiver.peers().contains { $0.peer == x } }
        peer = try await link()
        try await peer.send(.topicControl(TopicControlFrame(topic: Self.topic, body: .subscribe(distance: 0))))
        try await peer.send(.ping(nonce: 9))
        // T1 answers a PING only after it handled every frame before it on the link.
        #expect(try await peer.next { if case .pong(9) = $0 { true } else { nil } } == true)
        snapshot = try #require(await receiver.topics().first { $0.topic == Self.topic })
        #expect(!snapshot.peers.contains(x))
        stats = await receiver.stats()
        #expect(stats.topics.peersPenalised["controlFlood"] == 1)

        // The honest neighbour T0 was never limited; its messages arrive.
        var honest: Set<MessageID> = []
        for index in 0..<5 { honest.insert(try await graph[0].publish([UInt8(index)], to: Self.topic)) }
        try await graph.waitUntil("T1 has T0's messages") { honest.isSubset(of: Set(graph.received(at: 1).map(\.id))) }
        #expect(await graph[0].stats().topics.peersPenalised.isEmpty)
    }
}
