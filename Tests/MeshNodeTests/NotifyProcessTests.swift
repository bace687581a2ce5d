import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// `scmesh events` and `notify.command` between two real `scmesh run` processes over
// TCP on 127.0.0.1: the receiver's hook sees each message in its environment, a muted
// peer raises none, and the event log lists the same messages. Every wait is a
// bounded poll.

@Suite("events and notifications between two node processes")
struct NotifyProcessTests {
    /// The environment a hook wrote (`env -0`), or nil while it has not.
    static func hookEnvironment(_ directory: String, _ id: String) -> [String: String]? {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(id).env") else { return nil }
        var environment: [String: String] = [:]
        for entry in data.split(separator: 0) {
            let text = String(decoding: entry, as: UTF8.self)
            guard let equals = text.firstIndex(of: "=") else { continue }
            environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        return environment
    }

    @Test(
        "notify.command gets each message's environment, not a muted peer's; events and events --follow list them"
    )
    func hookAndEvents() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let hooks = nodes.directory.file("hooks")
        try FileManager.default.createDirectory(atPath: hooks, withIntermediateDirectories: true)
        // The hook writes its environment to a temporary file, then renames it: a file
        // named after the message appears whole.
        let command = "env -0 > \(hooks)/tmp.$$ && mv \(hooks)/tmp.$$ \(hooks)/$SCMESH_MESSAGE_ID.env"
        let (nodeA, nodeB) = try await nodes.startPair(secondArguments: ["--set", "notify.command=\(command)"])
        let (a, b, idA, idB, clientA) = (
            nodeA.dataDirectory, nodeB.dataDirectory, nodeA.peerID, nodeB.peerID, nodeA.client
        )
        try await eventually("A has a link to B", attempts: 1500) {
            try await clientA.call(.peers).decode(PeersReply.self).peers.contains { $0.peer == idB }
        }
        let added = try await runScmesh(["contacts", "add", "alice", idA.hex, "--data-dir", b], home: home)
        #expect(added.status == 0, "\(added.standardError)")
        let followLog = nodes.directory.file("events.jsonl")
        let follower = try startFollower(
            ["events", "--data-dir", b, "--follow", "--json"],
            output: followLog,
            home: home
        )
        defer { stopProcess(follower) }

        func send(_ text: String) async throws -> String {
            let reply = try await runScmesh(["send", idB.hex, text, "--wait", "--json", "--data-dir", a], home: home)
            #expect(reply.status == 0, "\(reply.standardError)")
            let object = try jsonObject(reply.standardOutput)
            #expect(object["status"] as? String == "delivered")
            return try #require(object["message_id"] as? String)
        }

        // 1. A message raises the hook with its environment.
        let first = try await send("hello bob")
        let environment = try await eventuallyValue("the hook ran for the first message") {
            Self.hookEnvironment(hooks, first)
        }
        #expect(environment["SCMESH_MESSAGE_ID"] == first)
        #expect(environment["SCMESH_FROM"] == idA.hex)
        #expect(environment["SCMESH_FROM_ALIAS"] == "alice")
        #expect(environment["SCMESH_TEXT"] == "hello bob")
        #expect(environment["SCMESH_BYTES"] == "9")
        #expect(environment["SCMESH_EMERGENCY"] == "0")
        #expect(environment["SCMESH_TOPIC"] == "")

        // 2. Muted, alice's message arrives and raises nothing; unmuted, the next does.
        let muted = try await runScmesh(["contacts", "mute", "alice", "--data-dir", b, "--json"], home: home)
        #expect(muted.status == 0, "\(muted.standardError)")
        #expect(try jsonObject(muted.standardOutput)["muted"] as? [String] == [idA.hex])
        let quiet = try await send("you will not hear this")
        let unmuted = try await runScmesh(["contacts", "unmute", "alice", "--data-dir", b], home: home)
        #expect(unmuted.status == 0 && unmuted.standardOutput.contains("unmuted alice"), "\(unmuted.standardOutput)")
        let third = try await send("and this you will")
        _ = try await eventuallyValue("the hook ran for the third message") {
            Self.hookEnvironment(hooks, third)
        }
        #expect(Self.hookEnvironment(hooks, quiet) == nil, "a muted peer's message raised the hook")
        #expect(try await inboxTexts(dataDirectory: b, home: home).contains("you will not hear this"))

        // 3. The event log lists the three messages received, in order, with ids that
        // grow by one; --after resumes after one of them.
        let listed = try await runScmesh(["events", "--data-dir", b, "--json", "--limit", "4096"], home: home)
        #expect(listed.status == 0, "\(listed.standardError) \(listed.standardOutput.prefix(300))")
        let events = try listed.standardOutput.split(separator: "\n").map { try jsonObject(String($0)) }
        let ids = events.compactMap { $0["id"] as? Int }
        #expect(ids.count == events.count && ids == Array((ids.first ?? 0)..<((ids.first ?? 0) + ids.count)))
        let received = events.filter { $0["kind"] as? String == "message_received" }
        #expect(received.compactMap { $0["message_id"] as? String } == [first, quiet, third])
        #expect(received.allSatisfy { $0["peer"] as? String == idA.hex })
        let resumeAfter = try #require(received.first?["id"] as? Int)
        let resumed = try await runScmesh(
            ["events", "--data-dir", b, "--json", "--after", "\(resumeAfter)", "--limit", "4096"],
            home: home
        )
        let resumedIDs = try resumed.standardOutput.split(separator: "\n").compactMap {
            try jsonObject(String($0))["id"] as? Int
        }
        #expect(resumedIDs.first == resumeAfter + 1 && resumedIDs.last == ids.last)
        let text = try await runScmesh(["events", "--data-dir", b, "--limit", "3"], home: home)
        #expect(text.standardOutput.split(separator: "\n").count == 3, "\(text.standardOutput)")
        #expect(text.standardOutput.hasPrefix("#"), "\(text.standardOutput)")

        // 4. The follower, started before the messages, printed them as they came.
        try await eventually("events --follow printed the third message", attempts: 1500) {
            let lines = (try? String(contentsOfFile: followLog, encoding: .utf8)) ?? ""
            return lines.contains(third)
        }
        let followed = try String(contentsOfFile: followLog, encoding: .utf8).split(separator: "\n")
            .map { try jsonObject(String($0)) }
            .filter { $0["kind"] as? String == "message_received" }
            .compactMap { $0["message_id"] as? String }
        #expect(followed == [first, quiet, third])

        // 5. A bad --after or --limit is refused in one line.
        let bad = try await runScmesh(["events", "--data-dir", b, "--limit", "0"], home: home)
        #expect(bad.status != 0 && bad.standardError.contains("--limit takes 1 to 4096"), "\(bad.standardError)")
    }
}
