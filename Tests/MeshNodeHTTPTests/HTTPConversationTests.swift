import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOHTTP1
import Testing

@Suite("HTTP API: conversations and unread")
struct HTTPConversationTests {
    @Test("GET /api/v1/conversations/{peer} lists both directions with text; the list and status count unread")
    func conversations() async throws {
        let network = uniqueNetwork()
        let a = try await HTTPNode.start(network: network)
        let b = try await HTTPNode.start(network: network)
        defer {
            Task {
                try await a.stop()
                try await b.stop()
            }
        }
        let (idA, idB) = (a.node.peerID.hex, b.node.peerID.hex)
        for (from, to, text) in [(a, idB, "hello b"), (b, idA, "hello a"), (a, idB, "again")] {
            let sent = try await from.call(
                .POST,
                "/api/v1/messages",
                json: #"{"peer":"\#(to)","text":"\#(text)","wait":true}"#
            )
            #expect(sent.status == 200 && sent.object["status"] as? String == "delivered", "\(sent.text)")
        }

        let atB = try await b.call(.GET, "/api/v1/conversations/\(idA.prefix(10))?limit=10")
        #expect(atB.status == 200, "\(atB.text)")
        let messages = try #require(atB.object["messages"] as? [[String: Any]])
        #expect(messages.map { $0["text"] as? String } == ["hello b", "hello a", "again"])
        #expect(messages.map { $0["direction"] as? String } == ["in", "out", "in"])
        #expect(messages.map { $0["unread"] as? Bool } == [true, nil, true])
        #expect(atB.object["unread"] as? Int == 2)

        let list = try await b.call(.GET, "/api/v1/conversations")
        let conversations = try #require(list.object["conversations"] as? [[String: Any]])
        #expect(conversations.count == 1 && conversations.first?["peer"] as? String == idA, "\(list.text)")
        #expect(conversations.first?["unread"] as? Int == 2 && conversations.first?["messages"] as? Int == 3)
        #expect(try await b.call(.GET, "/api/v1/status").object["unread"] as? Int == 2)
        let unread = try await b.call(.GET, "/api/v1/inbox?unread=true").object["messages"] as? [[String: Any]]
        #expect(unread?.count == 2)
        let found = try await b.call(.GET, "/api/v1/messages?grep=AGAIN").object["messages"] as? [[String: Any]]
        #expect(found?.map { $0["text"] as? String } == ["again"])

        let missing = try await b.call(.GET, "/api/v1/conversations/nobody")
        #expect(missing.status >= 400 && missing.status < 500 && missing.errorCode != nil, "\(missing.text)")
    }
}
