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
        try await HTTPNode.withPair { a, b in
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

            // POST /api/v1/read: one by ID, then the rest of one peer's.
            let firstID = try #require(messages.first?["message_id"] as? String)
            let one = try await b.call(.POST, "/api/v1/read", json: #"{"ids":["\#(firstID)"]}"#)
            #expect(one.status == 200, "\(one.text)")
            #expect(one.object["marked"] as? Int == 1 && one.object["unread"] as? Int == 1, "\(one.text)")
            let rest = try await b.call(.POST, "/api/v1/read", json: #"{"all":true,"peer":"\#(idA.prefix(10))"}"#)
            #expect(rest.object["marked"] as? Int == 1 && rest.object["unread"] as? Int == 0, "\(rest.text)")
            let after = try await b.call(.GET, "/api/v1/conversations")
            #expect((after.object["conversations"] as? [[String: Any]])?.first?["unread"] as? Int == 0, "\(after.text)")
            for body in [#"{"ids":"abc"}"#, #"{"all":"yes"}"#, #"{"peer":1,"all":true}"#, #"{"x":1}"#, #"{}"#] {
                let refused = try await b.call(.POST, "/api/v1/read", json: body)
                #expect(refused.status == 400 && refused.errorCode != nil, "\(body): \(refused.text)")
            }
            let zeros = String(repeating: "0", count: 32)
            let stranger = try await b.call(.POST, "/api/v1/read", json: #"{"ids":["\#(zeros)"]}"#)
            #expect(stranger.status == 404, "\(stranger.text)")
        }
    }
}
