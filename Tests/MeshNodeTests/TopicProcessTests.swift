import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Issue 14's process test: six `scmesh run` processes in a chain N0–N1–…–N5 over TCP
// on 127.0.0.1 (node i dials only node i − 1); N2, N3 and N5 subscribe to a topic with
// `scmesh subscribe`, N0 publishes 20 messages with `scmesh publish`. Every wait is a
// bounded poll; nothing asserts a time.

@Suite("topics over six processes", .serialized)
struct TopicProcessTests {
    static let topic = "/test/chain/v1"
    static let count = 6
    static let subscribers: Set<Int> = [2, 3, 5]

    @Test(
        "20 messages published at one end reach each of the three subscribers exactly once and no non-subscriber's inbox"
    )
    func publishAlongAChain() async throws {
        var line = try await NodeLine(count: Self.count)
        defer { line.stopAll() }
        let (home, directories) = (line.home, line.directories)
        let clients = (0..<Self.count).map { line.client($0) }
        func client(_ index: Int) -> ControlClient { clients[index] }
        func topics(_ index: Int) async throws -> [TopicSnapshot] {
            try await client(index).call(.topics).decode(TopicsReply.self).topics
        }
        // The seed's default topics are subscribed out of the box, and the emergency topic.
        let defaults = try await topics(0).filter(\.subscribed).map(\.topic)
        #expect(Set(defaults) == Set(TopicConfiguration.seedTopics + [TopicName.emergency]), "\(defaults)")

        for index in Self.subscribers.sorted() {
            let reply = try await runScmesh(["subscribe", "--data-dir", directories[index], Self.topic], home: home)
            #expect(
                reply.status == 0 && reply.standardOutput.contains(Self.topic),
                "\(reply.standardOutput)\(reply.standardError)"
            )
        }
        // Every node takes part (relays for the non-subscribers) with a full mesh along the chain.
        for index in 0..<Self.count {
            let expected = index == 0 || index == Self.count - 1 ? 1 : 2
            try await eventually("node \(index)'s mesh for the topic has its \(expected) neighbours", attempts: 1500) {
                guard let snapshot = try await topics(index).first(where: { $0.topic == Self.topic }) else {
                    return false
                }
                return snapshot.mesh.count == expected && snapshot.subscribed == Self.subscribers.contains(index)
            }
        }
        let listing = try jsonObject(
            try await runScmesh(["topics", "--data-dir", directories[1], "--json"], home: home).standardOutput
        )
        let row = try #require(
            (listing["topics"] as? [[String: Any]])?.first { $0["topic"] as? String == Self.topic },
            "\(listing)"
        )
        #expect(
            row["subscribed"] as? Bool == false && row["relaying"] as? Bool == true && row["distance"] as? Int == 1,
            "\(row)"
        )

        let texts = (1...20).map { "topic message \($0)" }
        for text in texts {
            let reply = try await runScmesh(["publish", "--data-dir", directories[0], Self.topic, text], home: home)
            #expect(
                reply.status == 0 && reply.standardOutput.contains("published on \(Self.topic)"),
                "\(reply.standardOutput)\(reply.standardError)"
            )
        }
        for index in Self.subscribers.sorted() {
            try await eventually("subscriber \(index) has the 20 messages", attempts: 1500) {
                Set(try await inboxTexts(dataDirectory: directories[index], home: home)).isSuperset(of: texts)
            }
        }
        // Let anything still in flight land before counting (the last subscriber got
        // everything, so every relay on the way passed on all 20).
        try await eventually("the relays passed on every message", attempts: 500) {
            let status = try await client(4).call(.status).decode(StatusReply.self)
            return status.stats.topics.accepted >= texts.count
        }
        for index in 0..<Self.count {
            let messages = try await inbox(dataDirectory: directories[index], home: home)
            if Self.subscribers.contains(index) {
                let inboxTexts = messages.compactMap { $0["text"] as? String }
                #expect(inboxTexts.sorted() == texts.sorted(), "node \(index) got \(inboxTexts.count) messages")
                #expect(messages.allSatisfy { $0["topic"] as? String == Self.topic })
                let ids = messages.compactMap { $0["message_id"] as? String }
                #expect(Set(ids).count == texts.count)
            } else {
                #expect(messages.isEmpty, "non-subscriber \(index) has \(messages.count) topic messages in its inbox")
            }
        }
        let text = try await runScmesh(["inbox", "--data-dir", directories[5], "--limit", "1"], home: home)
        #expect(text.standardOutput.contains("topic \(Self.topic)"), "\(text.standardOutput)")

        // The subscription survives a restart; no message is delivered again.
        try await line.restart(5, extra: [])
        #expect(try await topics(5).first { $0.topic == Self.topic }?.subscribed == true)
        let unsubscribed = try await runScmesh(
            ["unsubscribe", "--data-dir", directories[5], "/scmesh/relay/v1", "--json"],
            home: home
        )
        #expect(unsubscribed.status == 0, "\(unsubscribed.standardError)")
        #expect(try await topics(5).first { $0.topic == "/scmesh/relay/v1" }?.subscribed != true)
        #expect(try await inboxTexts(dataDirectory: directories[5], home: home).count == texts.count)
    }
}
