import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Issue 15's "what a new user missed": short peer IDs, JSON client errors, inbox
// --follow and --save, config check without FILE. Real `scmesh` processes over TCP on
// 127.0.0.1; every wait is a bounded poll.

@Suite("scmesh input and output conveniences")
struct CLIInputProcessTests {
    @Test(
        "short peer IDs, ambiguous prefixes, inbox --follow (text and JSON lines) and --save (over the control socket: the HTTP API is off) between two nodes"
    )
    func shortIDsFollowSave() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let (directory, home) = (nodes.directory, nodes.home)
        // B serves no HTTP API: --save takes the payloads over the control socket.
        let (nodeA, nodeB) = try await nodes.startPair(secondArguments: ["--set", "http.enabled=false"])
        let (a, b, clientA, clientB) = (nodeA.dataDirectory, nodeB.dataDirectory, nodeA.client, nodeB.client)
        let idB = try await clientB.call(.status).decode(StatusReply.self).peerID
        try await eventually("A has a link to B", attempts: 1500) {
            try await clientA.call(.peers).decode(PeersReply.self).peers.contains { $0.peer == idB }
        }

        // Followers on B, text and JSON lines, writing to files.
        let saved = directory.file("saved")
        let textLog = directory.file("follow.txt")
        let jsonLog = directory.file("follow.jsonl")
        let followText = try startFollower(
            ["inbox", "--data-dir", b, "--follow", "--save", saved],
            output: textLog,
            home: home
        )
        defer { stopProcess(followText) }
        let followJSON = try startFollower(
            ["inbox", "--data-dir", b, "--follow", "--json"],
            output: jsonLog,
            home: home
        )
        defer { stopProcess(followJSON) }

        // A sends by the first 8 hex characters of B's peer ID (a connected peer).
        let short = String(idB.hex.prefix(8))
        let text = try await runScmesh(
            ["send", "--data-dir", a, "--json", "--timeout", "30", short, "by a short ID"],
            home: home
        )
        #expect(text.status == 0, "\(text.standardError)")
        #expect(try jsonObject(text.standardOutput)["peer"] as? String == idB.hex)
        let textID = try #require(try jsonObject(text.standardOutput)["message_id"] as? String)
        // And a binary payload by an upper-case prefix.
        let binary: [UInt8] = [0, 1, 2, 0xFF, 0xFE, 10, 13, 0x1B]
        let sent = try await runScmesh(
            ["send", "--data-dir", a, "--json", "--timeout", "30", String(idB.hex.prefix(12)).uppercased(), "-"],
            environment: scmeshEnvironment(home: home),
            input: binary
        )
        #expect(sent.status == 0, "\(sent.standardError)")
        let binaryID = try #require(try jsonObject(sent.standardOutput)["message_id"] as? String)

        try await eventually("the text follower printed both", attempts: 1500) {
            let log = (try? String(contentsOfFile: textLog, encoding: .utf8)) ?? ""
            return log.contains("    by a short ID") && log.contains("(binary, base64) AAEC//4KDRs=")
        }
        try await eventually("the JSON follower printed one line per message", attempts: 1500) {
            let lines = ((try? String(contentsOfFile: jsonLog, encoding: .utf8)) ?? "").split(separator: "\n")
            return lines.count == 2
        }
        let jsonLines = try String(contentsOfFile: jsonLog, encoding: .utf8).split(separator: "\n").map {
            try jsonObject(String($0))
        }
        #expect(jsonLines.map { $0["seq"] as? Int } == [1, 2])
        #expect(jsonLines.first?["text"] as? String == "by a short ID")
        try await eventually("--save wrote the binary payload", attempts: 1500) {
            FileManager.default.contents(atPath: (saved as NSString).appendingPathComponent(binaryID)) == Data(binary)
        }
        let mode = try FileManager.default.attributesOfItem(
            atPath: (saved as NSString).appendingPathComponent(binaryID)
        )[.posixPermissions]
        #expect((mode as? NSNumber)?.intValue == 0o600)
        // Both, and no temporary file beside them.
        #expect(try FileManager.default.contentsOfDirectory(atPath: saved).sorted() == [textID, binaryID].sorted())

        // Two contacts whose IDs share "abcd": the prefix is ambiguous, a longer one is not.
        let x = "abcd" + String(repeating: "1", count: 60)
        let y = "abcd" + String(repeating: "2", count: 60)
        for (alias, peer) in [("x", x), ("y", y)] {
            #expect(try await runScmesh(["contacts", "add", "--data-dir", a, alias, peer], home: home).status == 0)
        }
        let ambiguous = try await runScmesh(["send", "--data-dir", a, "abcd", "hi"], home: home)
        #expect(ambiguous.status == 1)
        #expect(
            ambiguous.standardError.contains(
                "\"abcd\" is the start of 2 known peer IDs (\(x), \(y)); give more characters"
            ),
            "\(ambiguous.standardError)"
        )
        let unique = try await runScmesh(["history", "--data-dir", a, "--json", "abcd2"], home: home)
        #expect(unique.status == 0, "\(unique.standardError)")
        let unknown = try await runScmesh(["send", "--data-dir", a, "fedcba98", "hi"], home: home)
        #expect(
            unknown.standardError.contains(
                "no contact has the alias \"fedcba98\" and no known peer's ID starts with it"
            ),
            "\(unknown.standardError)"
        )
        // contacts add takes a prefix of a known peer too.
        let added = try await runScmesh(["contacts", "add", "--data-dir", a, "bob", short], home: home)
        #expect(added.status == 0, "\(added.standardError)")
        #expect(
            added.standardOutput.contains("bob") && added.standardOutput.contains(idB.hex),
            "\(added.standardOutput)"
        )
    }

    @Test("--json: client-side errors are JSON on stdout too (node not running, a bad option value)")
    func clientErrorsAsJSON() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let down = try await runScmesh(
            ["status", "--json", "--data-dir", directory.file("none")],
            home: directory.path
        )
        #expect(down.status == 1)
        let reply = try jsonObject(down.standardOutput)
        #expect(reply["ok"] as? Bool == false)
        #expect(reply["code"] as? String == "nodeNotRunning")
        #expect((reply["message"] as? String)?.contains("no node is running") == true)
        #expect(down.standardError.isEmpty)
        let badDuration = try await runScmesh(
            ["invite", "--json", "--expires", "soon", "--data-dir", directory.file("none")],
            home: directory.path
        )
        #expect(badDuration.status == 1)
        #expect(
            try jsonObject(badDuration.standardOutput)["message"] as? String
                == "--expires takes a duration such as 90s, 30m, 24h or 7d, got \"soon\""
        )
        // Without --json the same error is one line on stderr.
        let plain = try await runScmesh(["status", "--data-dir", directory.file("none")], home: directory.path)
        #expect(plain.standardOutput.isEmpty)
        #expect(plain.standardError.hasPrefix("scmesh: no node is running"))
    }

    @Test("config check without FILE checks the built-in config, or $SCMESH_CONFIG's file")
    func configCheckEffective() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let builtIn = try await runScmesh(["config", "check", "--set", "node.name=probe"], home: directory.path)
        #expect(builtIn.status == 0, "\(builtIn.standardError)")
        #expect(builtIn.standardOutput.contains("name: probe"))
        #expect(builtIn.standardOutput.contains("transports:"))
        let file = directory.file("bad.yaml")
        try "relay:\n  enabled: true\n  bogus: 1\n".write(toFile: file, atomically: true, encoding: .utf8)
        var environment = scmeshEnvironment(home: directory.path)
        environment["SCMESH_CONFIG"] = file
        let fromEnvironment = try await runScmesh(["config", "check"], environment: environment)
        #expect(fromEnvironment.status == 1)
        #expect(fromEnvironment.standardError.contains("unknown key relay.bogus"), "\(fromEnvironment.standardError)")
        #expect(fromEnvironment.standardError.contains("(from \(file) line 3)"), "\(fromEnvironment.standardError)")
    }
}
