import Foundation
import MeshCore
import TestSupport
import Testing

/// Two `scmesh run` processes linked over TCP on loopback, alice (a) and bob (b), each
/// naming the other as a contact.
private struct TwoNodes {
    let nodes: NodeProcesses
    let alice: NodeProcesses.Node
    let bob: NodeProcesses.Node
    var a: String { alice.dataDirectory }
    var b: String { bob.dataDirectory }
    var idA: String { alice.peerID.hex }
    var idB: String { bob.peerID.hex }
    var home: String { nodes.home }

    static func start() async throws -> TwoNodes {
        let nodes = try NodeProcesses()
        let (alice, bob) = try await nodes.startPair(both: ["--set", "http.enabled=false"])
        let pair = TwoNodes(nodes: nodes, alice: alice, bob: bob)
        #expect(try await pair.run(["contacts", "add", "--data-dir", pair.b, "alice", pair.idA]).status == 0)
        #expect(try await pair.run(["contacts", "add", "--data-dir", pair.a, "bob", pair.idB]).status == 0)
        return pair
    }

    func stop() { nodes.stop() }

    func run(_ arguments: [String]) async throws -> ScmeshResult {
        try await nodes.run(arguments)
    }

    /// `scmesh ARGUMENTS --json` on the node of `dataDirectory`, which must succeed.
    func json(_ dataDirectory: String, _ arguments: [String]) async throws -> [String: Any] {
        let result = try await run(arguments + ["--data-dir", dataDirectory, "--json"])
        #expect(result.status == 0, "\(arguments): \(result.standardError) \(result.standardOutput)")
        return try jsonObject(result.standardOutput)
    }

    /// Sends `text` and waits for its receipt; returns the message ID.
    func send(from dataDirectory: String, to peer: String, _ text: String) async throws -> String {
        let reply = try await json(dataDirectory, ["send", "--timeout", "30", peer, text])
        #expect(reply["status"] as? String == "delivered", "\(reply)")
        return try #require(reply["message_id"] as? String)
    }

    func unread(_ dataDirectory: String) async throws -> Int? {
        try await json(dataDirectory, ["status"])["unread"] as? Int
    }
}

@Suite("scmesh as a messenger: history with text, conversations, unread")
struct ConversationProcessTests {
    @Test("a message's text is in both nodes' histories and both conversation views, unread until read")
    func textInHistoriesAndConversations() async throws {
        let nodes = try await TwoNodes.start()
        defer { nodes.stop() }
        let hello = try await nodes.send(from: nodes.a, to: "bob", "hello bob")
        let reply = try await nodes.send(from: nodes.b, to: "alice", "hi alice")

        for (dataDirectory, peer) in [(nodes.a, nodes.idB), (nodes.b, nodes.idA)] {
            let history = try #require(try await nodes.json(dataDirectory, ["history"])["messages"] as? [[String: Any]])
            let texts = history.map { "\($0["direction"] ?? "")/\($0["text"] ?? "")/\($0["status"] ?? "")" }
            let (sent, received) = dataDirectory == nodes.a ? ("hello bob", "hi alice") : ("hi alice", "hello bob")
            #expect(texts.contains("outbound/\(sent)/delivered"), "\(texts)")
            #expect(texts.contains("inbound/\(received)/received"), "\(texts)")
            #expect(history.allSatisfy { $0["peer"] as? String == peer })
        }
        let found = try await nodes.json(nodes.b, ["history", "--grep", "HELLO"])["messages"] as? [[String: Any]]
        #expect(found?.map { $0["message_id"] as? String } == [hello])

        let atA = try await nodes.json(nodes.a, ["conversation", "bob"])
        let messagesA = try #require(atA["messages"] as? [[String: Any]])
        #expect(messagesA.map { $0["direction"] as? String } == ["out", "in"])
        #expect(messagesA.map { $0["text"] as? String } == ["hello bob", "hi alice"])
        #expect(messagesA.map { $0["status"] as? String } == ["delivered", "received"])
        #expect(messagesA.allSatisfy { $0["created_at"] is String })
        #expect(atA["unread"] as? Int == 1 && atA["alias"] as? String == "bob")
        let atB = try await nodes.json(nodes.b, ["conversation", String(nodes.idA.prefix(8))])
        #expect((atB["messages"] as? [[String: Any]])?.map { $0["direction"] as? String } == ["in", "out"])
        #expect((atB["messages"] as? [[String: Any]])?.map { $0["text"] as? String } == ["hello bob", "hi alice"])
        let last = try await nodes.json(nodes.b, ["conversation", "alice", "--limit", "1"])
        #expect((last["messages"] as? [[String: Any]])?.map { $0["message_id"] as? String } == [reply])
        let text = try await nodes.run(["conversation", "alice", "--data-dir", nodes.b])
        #expect(text.standardOutput.contains("    hello bob") && text.standardOutput.contains("unread"))

        // Unread until read: by ID prefix on a, with --all on b.
        #expect(try await nodes.unread(nodes.a) == 1)
        #expect(try await nodes.json(nodes.a, ["inbox", "--unread"])["messages"] as? [Any] != nil)
        #expect((try await nodes.json(nodes.a, ["inbox", "--unread"])["messages"] as? [Any])?.count == 1)
        let marked = try await nodes.json(nodes.a, ["inbox"])["messages"] as? [[String: Any]]
        #expect(marked?.map { $0["unread"] as? Bool } == [true])
        #expect(try await nodes.run(["inbox", "--data-dir", nodes.a]).standardOutput.contains("  unread\n"))
        let read = try await nodes.json(nodes.a, ["read", String(reply.prefix(8))])
        #expect(read["marked"] as? Int == 1 && read["unread"] as? Int == 0)
        #expect(try await nodes.unread(nodes.a) == 0)
        #expect((try await nodes.json(nodes.a, ["inbox", "--unread"])["messages"] as? [Any])?.isEmpty == true)
        let readNow = try await nodes.json(nodes.a, ["inbox"])["messages"] as? [[String: Any]]
        #expect(readNow?.count == 1 && readNow?.first?["unread"] == nil)
        let conversations = try await nodes.json(nodes.b, ["conversations"])
        #expect(conversations["unread"] as? Int == 1)
        #expect(try await nodes.json(nodes.b, ["read", "--all", "--peer", "alice"])["marked"] as? Int == 1)
        #expect(try await nodes.unread(nodes.b) == 0)
    }

    @Test("history clear empties a conversation, inbox delete drops one message; refusals are one line")
    func clearDeleteAndRefusals() async throws {
        let nodes = try await TwoNodes.start()
        defer { nodes.stop() }
        _ = try await nodes.send(from: nodes.a, to: "bob", "first")
        _ = try await nodes.send(from: nodes.a, to: "bob", "second")

        let inbox = try #require(try await nodes.json(nodes.b, ["inbox"])["messages"] as? [[String: Any]])
        let firstSeq = try #require(inbox.first { $0["text"] as? String == "first" }?["seq"] as? Int)
        #expect(try await nodes.json(nodes.b, ["inbox", "delete", String(firstSeq)])["deleted"] as? Int == 1)
        #expect(try await inboxTexts(dataDirectory: nodes.b, home: nodes.home) == ["second"])
        let again = try await nodes.run(["inbox", "delete", String(firstSeq), "--data-dir", nodes.b])
        #expect(again.status != 0 && again.standardError.contains("sequence number \(firstSeq)"))
        #expect(again.standardError.split(separator: "\n").count == 1, "\(again.standardError)")

        // The history still has both texts until cleared.
        let before = try await nodes.json(nodes.b, ["conversation", "alice"])["messages"] as? [[String: Any]]
        #expect(before?.map { $0["text"] as? String } == ["first", "second"])
        #expect(try await nodes.json(nodes.b, ["history", "clear", "alice"])["deleted"] as? Int == 2)
        #expect((try await nodes.json(nodes.b, ["conversation", "alice"])["messages"] as? [Any])?.isEmpty == true)
        #expect(try await nodes.json(nodes.a, ["history", "clear"])["deleted"] as? Int == 2)
        #expect((try await nodes.json(nodes.a, ["history"])["messages"] as? [Any])?.isEmpty == true)

        // With bob gone the message is sealed before it is queued; its text is kept.
        nodes.nodes.kill9(nodes.bob)
        let queued = try await nodes.json(nodes.a, ["send", "bob", "while you were away"])
        #expect(queued["status"] as? String == "queued", "\(queued)")
        let away = try await nodes.json(nodes.a, ["conversation", "bob"])["messages"] as? [[String: Any]]
        #expect(away?.map { $0["text"] as? String } == ["while you were away"])
        #expect(away?.first?["status"] as? String == "queued")

        for arguments in [
            ["conversation", "nobody"], ["read", "0123456789abcdef0123456789abcdef"], ["read", "zz"],
            ["history", "clear", "nobody"],
        ] {
            let refused = try await nodes.run(arguments + ["--data-dir", nodes.a])
            #expect(refused.status != 0, "\(arguments)")
            #expect(refused.standardError.split(separator: "\n").count == 1, "\(arguments): \(refused.standardError)")
        }
    }
}
