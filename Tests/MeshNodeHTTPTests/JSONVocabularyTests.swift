import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOHTTP1
import Testing

// Issue 43: one JSON vocabulary across the control socket and the HTTP API: a peer is
// `peer`, a message `message_id`, times end in `_at`, every reply has `ok`, one error
// shape. Each former name is still written beside its new one (deprecated, one minor
// release; CHANGELOG.md).

@Suite("JSON vocabulary: the socket and the HTTP API name things one way")
struct JSONVocabularyTests {
    /// The reply of `command` on the control socket as a JSON object.
    static func socket(_ node: HTTPNode, _ command: NodeCommand) async throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(try await node.control.call(command).line.utf8))
                as? [String: Any]
        )
    }

    /// `object[new]` is present, and `object[old]` (deprecated) holds the same value.
    static func renamed(
        _ object: [String: Any],
        _ old: String,
        _ new: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let value = object[new].map { "\($0)" }
        #expect(value != nil, "no \(new) in \(object)", sourceLocation: sourceLocation)
        #expect(
            object[old].map { "\($0)" } == value,
            "\(old) differs from \(new) in \(object)",
            sourceLocation: sourceLocation
        )
    }

    @Test("replies name a peer peer, a message message_id and times *_at on both interfaces, former names beside them")
    func namesAgree() async throws {
        try await HTTPNode.withPair { a, b in
            let (idA, idB) = (a.node.peerID.hex, b.node.peerID.hex)
            let sent = try await a.call(.POST, "/api/v1/messages", json: #"{"peer":"\#(idB)","text":"hi","wait":true}"#)
            #expect(
                sent.object["ok"] as? Bool == true && sent.object["status"] as? String == "delivered",
                "\(sent.text)"
            )
            let messageID = try #require(sent.object["message_id"] as? String)
            _ = try await a.call(.POST, "/api/v1/contacts", json: #"{"alias":"bob","peer":"\#(idB)"}"#)

            for status in [try await Self.socket(a, .status), try await a.call(.GET, "/api/v1/status").object] {
                #expect(status["peer"] as? String == idA, "\(status)")
                Self.renamed(status, "peer_id", "peer")
            }
            let overSocket = try await Self.socket(b, .inbox(InboxRequest()))
            for inbox in [overSocket, try await b.call(.GET, "/api/v1/inbox").object] {
                let message = try #require((inbox["messages"] as? [[String: Any]])?.first, "\(inbox)")
                #expect(message["message_id"] as? String == messageID && message["peer"] as? String == idA)
                Self.renamed(message, "id", "message_id")
                Self.renamed(message, "from", "peer")
            }
            let history = try #require(
                (try await a.call(.GET, "/api/v1/messages").object["messages"] as? [[String: Any]])?.first
            )
            #expect(history["message_id"] as? String == messageID)
            Self.renamed(history, "id", "message_id")
            let trace = try await a.call(.GET, "/api/v1/messages/\(messageID)").object
            Self.renamed(try #require(trace["message"] as? [String: Any]), "id", "message_id")
            for event in try #require(trace["trace"] as? [[String: Any]]) { Self.renamed(event, "at", "occurred_at") }
            let conversation = try #require(
                (try await a.call(.GET, "/api/v1/conversations/\(idB)").object["messages"] as? [[String: Any]])?.first
            )
            Self.renamed(conversation, "id", "message_id")
            Self.renamed(conversation, "at", "created_at")
            let contact = try #require(
                (try await a.call(.GET, "/api/v1/contacts").object["contacts"] as? [[String: Any]])?.first
            )
            Self.renamed(contact, "last_seen", "last_seen_at")
            let events = try await Self.socket(a, .events(after: 0, limit: 10))
            for event in try #require(events["events"] as? [[String: Any]]) {
                Self.renamed(event, "time", "occurred_at")
            }

            // Every JSON reply of the HTTP API has "ok": true, as on the socket.
            for path in [
                "status", "peers", "transports", "routes", "outbox", "inbox", "contacts", "topics", "settings",
                "conversations", "peers/known", "invitations", "messages",
            ] {
                let reply = try await a.call(.GET, "/api/v1/\(path)")
                #expect(reply.status == 200 && reply.object["ok"] as? Bool == true, "\(path): \(reply.text)")
            }
            // A message ID is message_id in requests too; id is still read.
            let traced = try await Self.socket(a, .trace(id: messageID))
            #expect(traced["ok"] as? Bool == true)
            let line = #"{"cmd":"trace","message_id":"\#(messageID)"}"#
            let byNewName = try ControlReply(line: try await a.control.exchange(Array(line.utf8)))
            #expect(byNewName.ok, "\(byNewName.line)")
        }
    }

    @Test("a failure has one shape on the socket and in HTTP: ok false, code, message, message_id; error beside it")
    func oneErrorShape() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let unknown = String(repeating: "ab", count: 16)
        let overSocket = try await Self.socket(a, .trace(id: unknown))
        let overHTTP = try await a.call(.GET, "/api/v1/messages/\(unknown)")
        #expect(overHTTP.status == 404)
        for failure in [overSocket, overHTTP.object] {
            #expect(failure["ok"] as? Bool == false, "\(failure)")
            #expect(failure["code"] as? String == "unknownMessage", "\(failure)")
            #expect((failure["message"] as? String)?.isEmpty == false, "\(failure)")
        }
        #expect(overSocket["message"] as? String == overHTTP.object["message"] as? String)
        // The former shapes, deprecated: the message as "error" on the socket, the
        // error object in HTTP.
        #expect(overSocket["error"] as? String == overSocket["message"] as? String)
        let former = try #require(overHTTP.object["error"] as? [String: Any])
        #expect(former["code"] as? String == "unknownMessage")
        #expect(former["message"] as? String == overHTTP.object["message"] as? String)

        // A refused send names the message on both.
        let id = String(repeating: "cd", count: 16)
        let stranger = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        let body = #"{"peer":"\#(stranger)","text":"x","message_id":"\#(id)","wait":true,"timeout_seconds":0.2}"#
        let timedOut = try await a.call(.POST, "/api/v1/messages", json: body)
        #expect(timedOut.object["ok"] as? Bool == false, "\(timedOut.text)")
        #expect(timedOut.object["code"] as? String == "timedOut", "\(timedOut.text)")
        #expect(timedOut.object["message_id"] as? String == id, "\(timedOut.text)")
    }
}
