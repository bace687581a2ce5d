import MeshCore
import MeshTesting
import Testing

/// TOPIC MESSAGE format 2 (a signed publication time) goes only on links that share
/// `topic_time` (docs/PROTOCOL.md §A.7, §A.11). In the line T0 – T1 – T2, T2 does not
/// announce `topic_time` (as a node of an earlier release): T1 publishes to it the
/// format-1 twin of its own message, withholds T0's format-2 message (it cannot be
/// turned into format 1), and passes T2's format-1 messages on to T0.
@Suite struct TopicTimeGatingTests {
    static let topic = "/scmesh/test/time"

    @Test(.timeLimit(.minutes(3))) func formatTwoOnlyWhereTopicTimeIsShared() async throws {
        let graph = await RouterGraph.topics(
            count: 3,
            edges: [(0, 1), (1, 2)],
            features: { $0 == 2 ? Capabilities.all.subtracting(.topicTime) : .all }
        )
        defer { Task { await graph.stop() } }
        for index in 0..<3 { try await graph[index].subscribe(to: Self.topic) }
        try await graph.waitForLinks()
        try await graph.waitForMesh(Self.topic)
        let t2 = graph[2].localPeerID
        #expect(await graph[1].peers().first { $0.peer == t2 }?.capabilities.contains("topic_time") == false)

        let fromT1 = try await graph[1].publish(Array("from T1".utf8), to: Self.topic)
        let fromT2 = try await graph[2].publish(Array("from T2".utf8), to: Self.topic)
        let fromT0 = try await graph[0].publish(Array("from T0".utf8), to: Self.topic)
        try await graph.waitUntil("T0 and T2 got T1's message, T0 got T2's, T1 got T0's", advancing: .milliseconds(100))
        {
            let ids = (0..<3).map { Set(graph.received(at: $0).map(\.id)) }
            return ids[0] == [fromT1, fromT2] && ids[1] == [fromT0, fromT2] && ids[2].contains(fromT1)
        }
        // T0's format-2 message never reaches T2, however often T1 is asked for it.
        try await graph.waitUntil("T1 withheld T0's message from T2", advancing: .milliseconds(100)) {
            await graph[1].stats().framesWithheld["topic_message_v2", default: 0] >= 1
        }
        #expect(graph.received(at: 2).map(\.id) == [fromT1])
        for index in 0..<3 {
            let stats = await graph[index].stats()
            #expect(stats.framesIgnored["topic_message_v2"] == nil, "N\(index) got format 2 where it is not shared")
            #expect(stats.topics.rejected.isEmpty, "N\(index): \(stats.topics.rejected)")
        }
    }
}
