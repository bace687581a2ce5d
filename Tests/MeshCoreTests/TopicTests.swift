import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// Topic publish/subscribe (docs/PROTOCOL.md §A.7) over in-process loopback links on a
/// manual clock: eager push along the topic mesh, exactly-once delivery to
/// subscribers only, lazy repair (IHAVE/IWANT) after a partition heals, and the light
/// peer scoring that prunes a neighbour sending forged messages or flooding.
@Suite struct TopicTests {
    static let topic = "/test/chat/v1"

    /// 20 nodes in a random connected graph, 8 of them subscribed: every message
    /// published (by subscribers and non-subscribers) reaches every subscriber exactly
    /// once and no non-subscriber's inbox. Then a subscriber is cut off from all its
    /// neighbours while 5 more messages go out; after the heal it catches up through
    /// IHAVE/IWANT, each message once.
    @Test(.timeLimit(.minutes(3))) func twentyNodeGraphDeliversToSubscribersOnceAndRepairsAfterAPartition() async throws
    {
        let count = 20
        let edges = RouterGraph.randomEdges(count: count, extra: 10, seed: 14)
        let graph = await RouterGraph.topics(count: count, edges: edges)
        defer { Task { await graph.stop() } }
        let subscribers: Set<Int> = [1, 4, 6, 9, 11, 13, 16, 19]
        for index in subscribers { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic)
        for index in 0..<count {
            let snapshot = try #require(await graph[index].topics().first { $0.topic == Self.topic })
            #expect(snapshot.subscribed == subscribers.contains(index))
            #expect(snapshot.relaying)
        }

        // Publishers: two non-subscribers and one subscriber.
        var published: [MessageID: Int] = [:]
        for round in 0..<4 {
            for publisher in [0, 7, 4] {
                let id = try await graph[publisher].publish(
                    Array("round \(round) from T\(publisher)".utf8),
                    to: Self.topic
                )
                published[id] = publisher
            }
        }
        try await graph.waitUntil("every subscriber has every message") {
            subscribers.allSatisfy { index in
                let expected = published.filter { $0.value != index }.count
                return graph.received(at: index).count >= expected
            }
        }
        for index in 0..<count {
            let ids = graph.received(at: index).map(\.id)
            if subscribers.contains(index) {
                #expect(ids.count == Set(ids).count, "N\(index) got a message twice")
                #expect(Set(ids) == Set(published.filter { $0.value != index }.keys), "N\(index)")
                #expect(graph.received(at: index).allSatisfy { $0.topic == Self.topic })
            } else {
                #expect(ids.isEmpty, "non-subscriber T\(index) put topic messages in its inbox")
            }
        }
        var transmissions = 0
        for index in 0..<count { transmissions += await graph[index].stats().topics.transmissions }
        // Eager push along a mesh covering a sparse graph: each message crosses each
        // link at most once each way.
        #expect(transmissions <= published.count * 2 * edges.count)

        // Cut subscriber 9 off from every neighbour.
        let cut = 9
        for neighbour in graph.neighbours(of: cut) {
            graph.network.partition(RouterGraph.address(cut), RouterGraph.address(neighbour))
        }
        try await graph.waitUntil("N\(cut) has no link left") { await graph[cut].peers().isEmpty }
        var during: Set<MessageID> = []
        for index in 0..<5 { during.insert(try await graph[0].publish([UInt8(index)], to: Self.topic)) }
        for index in subscribers where index != cut {
            try await graph.waitUntil("N\(index) has the messages sent during the cut") {
                during.isSubset(of: Set(graph.received(at: index).map(\.id)))
            }
        }
        #expect(Set(graph.received(at: cut).map(\.id)).isDisjoint(with: during))
        let servedBefore = await totalServed(graph)

        for neighbour in graph.neighbours(of: cut) {
            graph.network.heal(RouterGraph.address(cut), RouterGraph.address(neighbour))
        }
        // Redials and heartbeats run on the manual clock: move it along while polling.
        try await graph.waitUntil("N\(cut) caught up", advancing: .milliseconds(50)) {
            during.isSubset(of: Set(graph.received(at: cut).map(\.id)))
        }
        let ids = graph.received(at: cut).map(\.id)
        #expect(ids.count == Set(ids).count, "the partitioned subscriber got a message twice")
        #expect(Set(ids) == Set(published.filter { $0.value != cut }.keys).union(during))
        #expect(await totalServed(graph) >= servedBefore + during.count, "the catch-up came through IWANT")
        #expect(await graph[cut].stats().topics.iwantRequested >= during.count)
        for index in 0..<count where !subscribers.contains(index) { #expect(graph.received(at: index).isEmpty) }
    }

    /// A neighbour whose messages carry signatures that do not verify is pruned from
    /// the topic mesh and ignored; honest messages published meanwhile still reach
    /// every subscriber, and no forged one lands in any inbox.
    @Test(.timeLimit(.minutes(3))) func aNeighbourSendingForgedMessagesIsPrunedAndHonestTrafficFlows() async throws {
        // 0 – 1 – 2 – 3 in a line, and the forger F = 4 linked to 1 and 2.
        let forger = 4
        let graph = await RouterGraph.topics(
            count: 5,
            edges: [(0, 1), (1, 2), (2, 3), (1, 4), (2, 4)],
            signers: [forger: ForgingSigner()]
        )
        defer { Task { await graph.stop() } }
        for index in 0..<5 { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic)
        let forgerID = graph[forger].localPeerID
        #expect(await graph[1].topics().first?.mesh.contains(forgerID) == true)

        for index in 0..<5 { _ = try await graph[forger].publish(Array("forged \(index)".utf8), to: Self.topic) }
        for neighbour in [1, 2] {
            try await graph.waitUntil("N\(neighbour) pruned the forger") {
                await graph[neighbour].stats().topics.peersPenalised["badSignature", default: 0] >= 1
            }
            let snapshot = try #require(await graph[neighbour].topics().first { $0.topic == Self.topic })
            #expect(!snapshot.mesh.contains(forgerID))
            #expect(!snapshot.peers.contains(forgerID))
            #expect(await graph[neighbour].stats().topics.rejected["badSignature", default: 0] >= 1)
        }
        var honest: Set<MessageID> = []
        for index in 0..<5 { honest.insert(try await graph[0].publish([UInt8(index)], to: Self.topic)) }
        for index in 1...3 {
            try await graph.waitUntil("N\(index) has the honest messages") {
                Set(graph.received(at: index).map(\.id)) == honest
            }
        }
        for index in 0...3 {
            #expect(graph.received(at: index).allSatisfy { $0.from != forgerID }, "a forged message reached T\(index)")
        }
    }

    /// A neighbour publishing beyond its share on a topic is pruned (reason
    /// `flooding`); its excess is not passed on, and an honest publisher's messages
    /// still arrive.
    @Test(.timeLimit(.minutes(3))) func aNeighbourFloodingATopicIsPruned() async throws {
        let flooder = 3
        let graph = await RouterGraph.topics(count: 4, edges: [(0, 1), (1, 2), (1, 3)]) { _ in
            TopicConfiguration(defaultTopics: [], peerRate: 1, peerBurst: 10)
        }
        defer { Task { await graph.stop() } }
        for index in [0, 2] { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic)
        let flooderID = graph[flooder].localPeerID
        for index in 0..<30 { _ = try await graph[flooder].publish([UInt8(index)], to: Self.topic) }
        try await graph.waitUntil("T1 pruned the flooder") {
            await graph[1].stats().topics.peersPenalised["flooding", default: 0] >= 1
        }
        let snapshot = try #require(await graph[1].topics().first { $0.topic == Self.topic })
        #expect(!snapshot.mesh.contains(flooderID))
        // The honest publisher still gets through; the relay passed on at most the
        // flooder's share, and was not penalised for it.
        var honest: Set<MessageID> = []
        for index in 0..<3 { honest.insert(try await graph[2].publish([UInt8(index)], to: Self.topic)) }
        try await graph.waitUntil("T0 has the honest messages") {
            honest.isSubset(of: Set(graph.received(at: 0).map(\.id)))
        }
        #expect(graph.received(at: 0).count(where: { $0.from == flooderID }) <= 10)
        #expect(await graph[0].stats().topics.peersPenalised.isEmpty)
    }

    /// The two topic frames round-trip, and a bad topic name or a short frame is
    /// rejected as malformed, never trapping.
    @Test func topicNamesAreChecked() throws {
        #expect(TopicName.problem(with: "/scmesh/global/v1") == nil)
        #expect(TopicName.problem(with: "") != nil)
        #expect(TopicName.problem(with: "no-slash") != nil)
        #expect(TopicName.problem(with: "/with space") != nil)
        #expect(TopicName.problem(with: "/" + String(repeating: "a", count: 200)) != nil)
        #expect(throws: MeshError.self) { try TopicConfiguration(defaultTopics: ["bad"]).validate() }
    }

    /// Both topic frames round-trip byte for byte in the layout of §A.7, and bad
    /// input (a short frame, a bad topic, a wrong count, trailing bytes) is rejected as
    /// malformed, never trapping.
    @Test func topicFramesRoundTripAndRejectBadInput() throws {
        let signer = TestReceiptSigner(peer: .random())
        var message = TopicMessageFrame(
            id: .random(),
            origin: signer.peer,
            ttl: 16,
            ageMillis: 250,
            lifetimeSeconds: 3600,
            topic: "/scmesh/global/v1",
            payload: Array("hello".utf8),
            signature: []
        )
        message.signature = signer.sign(message.signedBytes)
        #expect(message.verify(with: signer))
        let encoded = Frame.topicMessage(message).encoded()
        #expect(encoded.count == 4 + 126 + 17 + 5)
        #expect(Array(encoded.prefix(4)) == [1, 6, 0, 0])
        #expect(try Frame.decode(encoded) == .topicMessage(message))
        // TTL and age are not signed; the topic is.
        var relayed = message
        relayed.ttl = 3
        relayed.ageMillis = 9999
        #expect(relayed.verify(with: signer))
        var moved = message
        moved.topic = "/other/v1"
        #expect(!moved.verify(with: signer))
        #expect(throws: MeshError.self) { try Frame.decode(Array(encoded.dropLast())) }
        #expect(throws: MeshError.self) { try Frame.decode(encoded + [0]) }

        let controls = [
            TopicControlFrame(topic: "/a/v1", body: .subscribe(distance: 2)),
            TopicControlFrame(topic: "/a/v1", body: .unsubscribe),
            TopicControlFrame(topic: "/a/v1", body: .graft),
            TopicControlFrame(topic: "/a/v1", body: .prune(backoffSeconds: 60)),
            TopicControlFrame(topic: "/a/v1", body: .ihave([.random(), .random()])),
            TopicControlFrame(topic: "", body: .iwant([.random()])),
        ]
        for control in controls {
            #expect(try Frame.decode(Frame.topicControl(control).encoded()) == .topicControl(control))
        }
        #expect(Frame.topicControl(controls[0]).encoded() == [1, 7, 0, 0, 1, 5] + Array("/a/v1".utf8) + [2])
        // An empty topic outside IWANT, a topic without the slash, an unknown kind, a
        // count that disagrees with the bytes: all malformed.
        for bad: [UInt8] in [
            [1, 7, 0, 0, 3, 0], [1, 7, 0, 0, 3, 2, 0x61, 0x62], [1, 7, 0, 0, 9, 1, 0x2F],
            [1, 7, 0, 0, 5, 1, 0x2F, 0, 2] + Array(repeating: 0, count: 16),
        ] {
            #expect(throws: MeshError.self) { try Frame.decode(bad) }
        }
    }

    private func totalServed(_ graph: RouterGraph) async -> Int {
        var served = 0
        for router in graph.routers { served += await router.stats().topics.iwantServed }
        return served
    }
}

/// A signer whose signatures never verify (it signs with a wrong key), so every
/// message its router publishes is forged; it checks others' signatures honestly.
struct ForgingSigner: ReceiptSigner {
    let honest = TestReceiptSigner(peer: PeerID.random())

    func digest(_ bytes: [UInt8]) -> [UInt8] { honest.digest(bytes) }
    func sign(_ bytes: [UInt8]) -> [UInt8] { honest.sign(bytes) }
    func verify(_ signature: [UInt8], of bytes: [UInt8], by peer: PeerID) -> Bool {
        honest.verify(signature, of: bytes, by: peer)
    }
}

/// Topic gossip against flooding on one denser graph (30 nodes, average degree ≈ 10,
/// everyone subscribed), counted with the real routers. Flooding (every node sends each new message to every neighbour but
/// the one it came from) is computed on the same graph in the same run.
@Suite struct TopicEfficiencyTests {
    @Test(.timeLimit(.minutes(3))) func gossipDeliversEverythingWithFewerTransmissionsThanFlooding() async throws {
        let count = 30
        let edges = RouterGraph.randomEdges(count: count, extra: 120, seed: 6)
        let graph = await RouterGraph.topics(count: count, edges: edges)
        defer { Task { await graph.stop() } }
        for index in 0..<count { try await graph[index].subscribe(to: TopicTests.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(TopicTests.topic)
        var before = 0
        for index in 0..<count { before += await graph[index].stats().topics.transmissions }
        let messages = 10
        var publishers: [Int] = []
        for index in 0..<messages {
            let publisher = (index * 7) % count
            publishers.append(publisher)
            _ = try await graph[publisher].publish([UInt8(index)], to: TopicTests.topic)
        }
        func expected(_ node: Int) -> Int { publishers.count { $0 != node } }
        try await graph.waitUntil("every node has every message it did not publish") {
            (0..<count).allSatisfy { graph.received(at: $0).count >= expected($0) }
        }
        var deliveries = 0
        for node in 0..<count {
            let ids = graph.received(at: node).map(\.id)
            #expect(ids.count == Set(ids).count && ids.count == expected(node))
            deliveries += ids.count
        }
        var after = 0
        for index in 0..<count { after += await graph[index].stats().topics.transmissions }
        let gossip = Double(after - before) / Double(deliveries)
        // Flooding: the publisher sends to all its neighbours, every other node to all
        // but the one it got the message from: 2·E − (N − 1) transmissions a message.
        let flooding = Double(messages * (2 * edges.count - (count - 1))) / Double(deliveries)
        let ratio = (Double(deliveries) / Double(messages * (count - 1)))
        print(
            "topic efficiency: \(count) nodes, \(edges.count) links, D = 6: delivery ratio \(ratio), transmissions per subscriber per message: gossip \(gossip), flooding \(flooding) (gossip/flooding \(gossip / flooding))"
        )
        #expect(ratio == 1)
        #expect(gossip < flooding)
    }
}
