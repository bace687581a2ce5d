import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Topic gossip on lossy links and long paths (docs/PROTOCOL.md §A.7): topic frames
/// are not acknowledged, so a lost push, a lost SUBSCRIBE or a TTL shorter than the
/// mesh must not cost a subscriber a message. The losses are deterministic (the first
/// frames of one type a node writes), on a manual clock.
@Suite struct TopicLossTests {
    static let topic = "/test/loss/v1"

    /// T0 – T1 – T2, T0 and T2 subscribed, T1 relaying. T1's push of the first message
    /// to T2 (its only neighbour) is lost: T1 has T2 in its mesh, and its heartbeat
    /// IHAVE goes to its mesh peers too, so T2 asks for the message with IWANT and gets
    /// it, once. (Before: IHAVE went only to neighbours outside the mesh, and T2 never
    /// got it.)
    @Test(.timeLimit(.minutes(3))) func aPushLostOnTheOnlyLinkIsRepairedByTheSameNeighbour() async throws {
        let drop = Mutex<FrameDropTransport?>(nil)
        let graph = await RouterGraph.topics(
            count: 3,
            edges: [(0, 1), (1, 2)],
            transport: { index, loopback in
                guard index == 1 else { return loopback }
                let wrapped = FrameDropTransport(loopback, dropping: 1, of: Frame.Kind.topicMessage.rawValue)
                drop.withLock { $0 = wrapped }
                return wrapped
            }
        )
        defer { Task { await graph.stop() } }
        for index in [0, 2] { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic, degree: 1)
        let first = try await graph[0].publish(Array("first".utf8), to: Self.topic)
        let second = try await graph[0].publish(Array("second".utf8), to: Self.topic)
        try await graph.waitUntil("T2 has both messages", seconds: 20, advancing: .milliseconds(50)) {
            Set(graph.received(at: 2).map(\.id)).isSuperset(of: [first, second])
        }
        let dropped: Int = drop.withLock { $0?.dropped.load(ordering: .relaxed) ?? 0 }
        #expect(dropped == 1, "T1's first push was lost")
        let ids: [MessageID] = graph.received(at: 2).map(\.id)
        #expect(ids.count == 2 && Set(ids) == Set([first, second]), "each message once")
        let requested = await graph[2].stats().topics.iwantRequested
        let served = await graph[1].stats().topics.iwantServed
        #expect(requested >= 1, "the lost message came through IWANT")
        #expect(served >= 1)
        #expect(graph.received(at: 1).isEmpty, "the relay keeps topic messages out of its inbox")
    }

    /// T0 – T1 – T2: T2 subscribes first, and its SUBSCRIBE to T1 is lost. Announcements
    /// are repeated on the next heartbeats, so T1 learns that T2 takes part, keeps it in
    /// its mesh and pushes T0's messages to it. (Before: announced once, T1 never knew,
    /// and T2 got nothing.)
    @Test(.timeLimit(.minutes(3))) func aLostSubscribeIsRepeated() async throws {
        let drop = Mutex<FrameDropTransport?>(nil)
        let graph = await RouterGraph.topics(
            count: 3,
            edges: [(0, 1), (1, 2)],
            transport: { index, loopback in
                guard index == 2 else { return loopback }
                let wrapped = FrameDropTransport(loopback, dropping: 1, of: Frame.Kind.topicControl.rawValue)
                drop.withLock { $0 = wrapped }
                return wrapped
            }
        )
        defer { Task { await graph.stop() } }
        try await graph.waitForLinks()
        try await graph[2].subscribe(to: Self.topic)
        try await graph[0].subscribe(to: Self.topic)
        // Heartbeats pass (announcements repeated, meshes settle), then T0 publishes.
        for _ in 0..<40 {
            graph.manualClock.advance(by: .milliseconds(100))
            try await Task.sleep(for: .milliseconds(5))
        }
        try await graph.waitForMesh(Self.topic, degree: 1)
        let dropped: Int = drop.withLock { $0?.dropped.load(ordering: .relaxed) ?? 0 }
        #expect(dropped == 1, "T2's SUBSCRIBE was lost")
        var sent: Set<MessageID> = []
        for index in 0..<3 { sent.insert(try await graph[0].publish([UInt8(index)], to: Self.topic)) }
        try await graph.waitUntil("T2 has T0's messages", seconds: 20, advancing: .milliseconds(50)) {
            Set(graph.received(at: 2).map(\.id)) == sent
        }
        let mesh = try #require(await graph[1].topics().first { $0.topic == Self.topic }).mesh
        #expect(mesh.contains(graph[2].localPeerID), "T1 keeps T2 in its mesh")
    }

    /// 18 nodes in a chain, T0, T8 and T17 subscribed: a message from T0 crosses 17
    /// hops to T17. (Before: the origin's TTL was 16 and T17 never got it; duplicates
    /// are dropped by ID, so the default is now 64.)
    @Test(.timeLimit(.minutes(3))) func aMessageCrossesAChainLongerThanTheOldTTL() async throws {
        let count = 18
        let graph = await RouterGraph.topics(count: count, edges: (1..<count).map { ($0 - 1, $0) })
        defer { Task { await graph.stop() } }
        let subscribers = [0, 8, 17]
        for index in subscribers { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic, degree: 1)
        let id = try await graph[0].publish(Array("end to end".utf8), to: Self.topic)
        try await graph.waitUntil("T8 and T17 have the message", seconds: 20, advancing: .milliseconds(50)) {
            graph.received(at: 8).map(\.id) == [id] && graph.received(at: 17).map(\.id) == [id]
        }
        for index in 0..<count where !subscribers.contains(index) { #expect(graph.received(at: index).isEmpty) }
    }
}
