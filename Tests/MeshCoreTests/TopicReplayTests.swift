import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// Issue 41, finding 3: a neighbour M, by hand (`RawPeer`), replays a publisher's
/// topic message claiming it is almost expired, and forges messages in the
/// publisher's name. A seen ID is kept for the message's whole lifetime whatever age
/// a copy claims, and the signature is checked before the origin's share is charged,
/// so the replay is a duplicate, and the honest publisher is neither refused nor
/// pruned (docs/PROTOCOL.md §A.7).
@Suite struct TopicReplayTests {
    static let topic = "/test/replay/v1"

    /// T0 publishes, T1 is subscribed; M is linked to T1.
    static func graph(burst: Int = 200) async throws -> (RouterGraph, RawPeer, RunningTransport) {
        let graph = await RouterGraph.topics(count: 2, edges: [(0, 1)]) { _ in
            TopicConfiguration(defaultTopics: [], peerRate: 0.001, peerBurst: burst)
        }
        for index in 0..<2 { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic)
        let m = PeerID.random()
        let transport = LoopbackTransport(
            name: "lo",
            address: "M",
            network: graph.network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(transport, localPeerID: m)
        let peer = RawPeer(link: try await transport.dial(PeerHint(transport: "lo", address: RouterGraph.address(1))))
        try await peer.sendPlaintextHello(as: m)
        _ = try #require(try await peer.link.receive())  // T1's hello
        return (graph, peer, running)
    }

    /// A topic message in `origin`'s name, signed by the test signer standing in for
    /// its key (or not signed at all).
    static func message(
        from origin: PeerID,
        ageMillis: UInt32,
        signed: Bool = true,
        publishedMillis: UInt64? = nil
    ) -> TopicMessageFrame {
        var frame = TopicMessageFrame(
            id: .random(),
            origin: origin,
            ttl: 8,
            ageMillis: ageMillis,
            lifetimeSeconds: 3600,
            topic: topic,
            payload: Array("news".utf8),
            signature: Array(repeating: 0, count: 64),
            publishedMillis: publishedMillis
        )
        if signed { frame.signature = TestReceiptSigner(peer: origin).sign(frame.signedBytes) }
        return frame
    }

    /// Sends `frames` and waits until T1 handled them (it answers a PING only after
    /// every frame before it on the link).
    static func send(_ frames: [Frame], on peer: inout RawPeer, nonce: UInt64) async throws {
        for frame in frames { try await peer.send(frame) }
        try await peer.send(.ping(nonce: nonce))
        #expect(try await peer.next { if case .pong(nonce) = $0 { true } else { nil } } == true)
    }

    @Test(.timeLimit(.minutes(3))) func aReplayClaimingAnAgeNearItsLifetimeIsADuplicate() async throws {
        let (graph, link, running) = try await Self.graph()
        var peer = link
        defer {
            Task {
                await running.stop()
                await graph.stop()
            }
        }
        let origin = graph[0].localPeerID
        let replayed = Self.message(from: origin, ageMillis: 3_600_000 - 1)
        try await Self.send([.topicMessage(replayed)], on: &peer, nonce: 1)
        #expect(graph.received(at: 1).map(\.id) == [replayed.id])
        for round in 0..<3 {
            graph.manualClock.advance(by: .seconds(5))
            try await Self.send([.topicMessage(replayed)], on: &peer, nonce: 10 + UInt64(round))
        }
        #expect(graph.received(at: 1).map(\.id) == [replayed.id])  // once
        #expect(await graph[1].stats().topics.duplicates >= 3)
    }

    @Test(.timeLimit(.minutes(3))) func forgeriesInAPublishersNameDoNotSpendItsShareOrPruneIt() async throws {
        let (graph, link, running) = try await Self.graph(burst: 1)
        var peer = link
        defer {
            Task {
                await running.stop()
                await graph.stop()
            }
        }
        let origin = graph[0].localPeerID
        try await Self.send(
            [.topicMessage(Self.message(from: origin, ageMillis: 0, signed: false))],
            on: &peer,
            nonce: 1
        )
        var stats = await graph[1].stats().topics
        #expect(stats.rejected["badSignature"] == 1)
        #expect(stats.peersPenalised["badSignature"] == 1)  // M, who sent it
        let id = try await graph[0].publish(Array("genuine".utf8), to: Self.topic)
        try await graph.waitUntil("T1 delivered the publisher's message") { graph.received(at: 1).map(\.id) == [id] }
        stats = await graph[1].stats().topics
        #expect(stats.peersPenalised["flooding"] == nil)
        #expect(await graph[1].topics().first { $0.topic == Self.topic }?.mesh.contains(origin) == true)
    }

    @Test(.timeLimit(.minutes(3))) func aSignedPublicationTimeBoundsAReplayWhateverAgeItClaims() async throws {
        let (graph, link, running) = try await Self.graph()
        var peer = link
        defer {
            Task {
                await running.stop()
                await graph.stop()
            }
        }
        let origin = graph[0].localPeerID
        let now = try #require(graph.manualClock.wallClockMillis)
        let skew = UInt64(10 * 60_000)
        // Published longer ago than its lifetime (plus the clock skew), claiming age 0;
        // published further ahead than the skew; the first with its time altered.
        let old = Self.message(from: origin, ageMillis: 0, publishedMillis: now - 3_600_000 - skew - 1)
        let future = Self.message(from: origin, ageMillis: 0, publishedMillis: now + skew + 1)
        var altered = old
        altered.publishedMillis = now
        try await Self.send([.topicMessage(old), .topicMessage(future)], on: &peer, nonce: 1)
        var stats = await graph[1].stats().topics
        #expect(stats.rejected["expired"] == 1 && stats.rejected["fromFuture"] == 1, "\(stats.rejected)")
        try await Self.send([.topicMessage(altered)], on: &peer, nonce: 2)
        stats = await graph[1].stats().topics
        #expect(stats.rejected["badSignature"] == 1)
        #expect(graph.received(at: 1).isEmpty)

        // The honest publisher signs its time; its message arrives.
        let id = try await graph[0].publish(Array("fresh".utf8), to: Self.topic)
        try await graph.waitUntil("T1 delivered the publisher's message") { graph.received(at: 1).map(\.id) == [id] }
    }
}
