import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing

// Issue 43, a newcomer's first hour: a node that can do nothing says so, the default
// config holds no in-process transport, and the CLI catches mistakes before they are
// queued. Real `scmesh` processes over TCP on 127.0.0.1; every wait is a bounded poll.

@Suite("scmesh for a newcomer: warnings, defaults, mistakes caught")
struct FirstHourProcessTests {
    @Test(
        "config check and run warn in one line each when relaying is off, no transport is enabled, or the file leaves out default sections"
    )
    func nodeThatCanDoNothingSaysSo() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let home = directory.path
        let file = directory.file("minimal.yaml")
        try "node: {name: x}\n".write(toFile: file, atomically: true, encoding: .utf8)

        let check = try await runScmesh(["config", "check", file], home: home)
        #expect(check.status == 0, "\(check.standardError)")
        #expect(check.standardOutput.contains("name: x"))
        let warnings = check.standardError.split(separator: "\n").filter { $0.hasPrefix("scmesh: warning: ") }
        #expect(warnings.count == 3, "\(check.standardError)")
        #expect(check.standardError.contains("warning: relay.enabled is not set, which counts as off"))
        #expect(check.standardError.contains("warning: no transport is enabled"))
        let sections = try #require(warnings.first { $0.contains("leaves out sections") })
        #expect(sections.contains("\(file) leaves out sections the default config has ("), "\(sections)")
        for applied in ["http off", "relay off", "every transport off"] {
            #expect(sections.contains(applied), "\(sections)")
        }
        #expect(!sections.contains("(node,") && !sections.contains(" node,"), "node is in the file: \(sections)")

        // What a file says (or --set) silences its warning; the built-in config has none.
        let given = try await runScmesh(
            ["config", "check", file, "--set", "relay.enabled=true", "--set", "transports.tcp.enabled=true"],
            home: home
        )
        #expect(given.status == 0)
        #expect(!given.standardError.contains("relay.enabled"), "\(given.standardError)")
        #expect(!given.standardError.contains("no transport"), "\(given.standardError)")
        #expect(given.standardError.contains("leaves out sections"))
        #expect(!given.standardError.contains("relay off"), "\(given.standardError)")
        let builtIn = try await runScmesh(["config", "check"], home: home)
        #expect(builtIn.status == 0)
        #expect(!builtIn.standardError.contains("warning"), "\(builtIn.standardError)")

        // run logs the same lines at warning level.
        let data = directory.file("data")
        let log = directory.file("node.log")
        let node = try startLogged(["run", "--config", file, "--data-dir", data], log: log, home: home)
        defer { stopProcess(node) }
        let client = ControlClient(dataDirectory: data)
        try await eventually("the node answers", attempts: 1500) { try await client.call(.status).ok }
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        let logged = lines.filter { $0.contains("warning") }
        #expect(logged.contains { $0.contains("relay.enabled is not set, which counts as off") }, "\(lines)")
        #expect(logged.contains { $0.contains("no transport is enabled") }, "\(lines)")
        #expect(logged.contains { $0.contains("leaves out sections the default config has") }, "\(lines)")
    }

    @Test(
        "two processes on the default config: no loopback transport in status, and their TCP link dials nothing over loopback"
    )
    func defaultConfigHasNoLoopback() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let home = directory.path
        let (a, b) = (directory.file("a"), directory.file("b"))
        let (logA, logB) = (directory.file("a.log"), directory.file("b.log"))
        let port = try freeLoopbackPort()
        // The default config, with only the parts that would reach beyond this test off.
        let common = [
            "--set", "transports.mdns.enabled=false", "--set", "transports.ble.enabled=false",
            "--set", "http.listen=127.0.0.1:0",
        ]
        let nodeA = try startLogged(
            ["run", "--data-dir", a, "--set", "transports.tcp.listen=127.0.0.1:\(port)"] + common,
            log: logA,
            home: home
        )
        defer { stopProcess(nodeA) }
        let nodeB = try startLogged(
            [
                "run", "--data-dir", b, "--set", "transports.tcp.listen=127.0.0.1:0",
                "--set", "transports.tcp.bootstrap=127.0.0.1:\(port)",
            ] + common,
            log: logB,
            home: home
        )
        defer { stopProcess(nodeB) }
        let (clientA, clientB) = (ControlClient(dataDirectory: a), ControlClient(dataDirectory: b))
        for client in [clientA, clientB] {
            try await eventually("a node answers", attempts: 1500) { try await client.call(.status).ok }
        }
        let idB = try await clientB.call(.status).decode(StatusReply.self).peerID
        // A delivered message: the link is up and each side's address record (sent at
        // link-up, before any message on the link) has arrived.
        let sent = try await runScmesh(["send", "--data-dir", a, "--timeout", "30", idB.hex, "over tcp"], home: home)
        #expect(sent.status == 0, "\(sent.standardError)")
        #expect(sent.standardOutput.contains("over tcp in"), "\(sent.standardOutput)")
        for data in [a, b] {
            let status = try await runScmesh(["status", "--data-dir", data], home: home)
            #expect(status.status == 0)
            #expect(!status.standardOutput.contains("loopback"), "\(status.standardOutput)")
        }
        for log in [logA, logB] {
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(!text.contains("over loopback"), "\(text)")
        }
    }

    @Test(
        "send refuses a peer ID that is no Ed25519 key, warns about an unknown one; identity asks for --create; history --trace takes a prefix; Ctrl-C during send --wait says the message stays queued"
    )
    func mistakesAreCaught() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let home = directory.path
        let data = directory.file("a")
        let node = try startScmesh(
            [
                "run", "--data-dir", data, "--set", "transports.tcp.listen=127.0.0.1:0", "--set",
                "http.listen=127.0.0.1:0",
            ]
                + tcpOnlyNodeArguments,
            home: home
        )
        defer { stopProcess(node) }
        let client = ControlClient(dataDirectory: data)
        try await eventually("the node answers", attempts: 1500) { try await client.call(.status).ok }

        // 64 hex characters that are not a point on the curve: refused, nothing queued.
        let notAKey = String(repeating: "ab", count: 32)
        let refused = try await runScmesh(["send", "--data-dir", data, notAKey, "to nobody"], home: home)
        #expect(refused.status == 1)
        #expect(refused.standardOutput.isEmpty)
        #expect(refused.standardError.contains("is not a valid peer ID"), "\(refused.standardError)")
        #expect(refused.standardError.contains("nothing was queued"), "\(refused.standardError)")
        let empty = try jsonObject(
            try await runScmesh(["outbox", "--data-dir", data, "--json"], home: home).standardOutput
        )
        #expect((empty["messages"] as? [Any])?.isEmpty == true, "\(empty)")

        // A valid key nobody here knows: queued, with a warning.
        let unknown = try await runScmesh(["send", "--data-dir", data, strangerPeerHex, "to a stranger"], home: home)
        #expect(unknown.status == 0, "\(unknown.standardError)")
        #expect(unknown.standardOutput.hasPrefix("queued message "), "\(unknown.standardOutput)")
        #expect(unknown.standardError.contains("warning: \(strangerPeerHex) is unknown to this node"))
        let unknownJSON = try await runScmesh(
            ["send", "--data-dir", data, "--json", strangerPeerHex, "again"],
            home: home
        )
        let reply = try jsonObject(unknownJSON.standardOutput)
        #expect((reply["warning"] as? String)?.contains("not a contact, no route to it, never seen") == true)
        let messageID = try #require(reply["message_id"] as? String)
        // As a contact it is known: no warning.
        #expect(
            try await runScmesh(["contacts", "add", "--data-dir", data, "carol", strangerPeerHex], home: home).status
                == 0
        )
        let known = try await runScmesh(["send", "--data-dir", data, "carol", "to carol"], home: home)
        #expect(known.status == 0)
        #expect(!known.standardError.contains("warning"), "\(known.standardError)")

        // history --trace by the start of an ID, as peers are named.
        let traced = try await runScmesh(
            ["history", "--data-dir", data, "--json", "--trace", String(messageID.prefix(8)).uppercased()],
            home: home
        )
        #expect(traced.status == 0, "\(traced.standardError)")
        let message = try jsonObject(traced.standardOutput)["message"] as? [String: Any]
        #expect(message?["message_id"] as? String == messageID, "\(traced.standardOutput)")
        let tooShort = try await runScmesh(["history", "--data-dir", data, "--trace", "ab"], home: home)
        #expect(tooShort.status == 1)
        #expect(tooShort.standardError.contains("its first 4 or more"), "\(tooShort.standardError)")

        // identity on a directory that does not exist: refused, nothing made.
        let typo = directory.file("no-such-dir")
        let identity = try await runScmesh(["identity", "--data-dir", typo], home: home)
        #expect(identity.status == 1)
        #expect(identity.standardError.contains("pass --create"), "\(identity.standardError)")
        #expect(!FileManager.default.fileExists(atPath: typo))
        let created = try await runScmesh(["identity", "--create", "--data-dir", typo], home: home)
        #expect(created.status == 0)
        #expect(PeerID(hex: created.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)) != nil)

        // send --wait names the message first on a terminal (a real pseudo-terminal
        // made by util-linux's script); into a pipe stderr keeps its one line.
        let script = "/usr/bin/script"
        try #require(FileManager.default.isExecutableFile(atPath: script), "util-linux's script is missing")
        let command = "'\(scmeshExecutable.path)' send --data-dir '\(data)' --timeout 0.2 carol 'on a terminal'"
        let terminal = try await runProcess(script, ["--quiet", "--return", "--command", command, "/dev/null"])
        let transcript = String(decoding: terminal.output, as: UTF8.self)
        #expect(terminal.status == 1, "\(transcript)")
        let first = try #require(transcript.range(of: "scmesh: sending message "), "\(transcript)")
        let timedOut = try #require(transcript.range(of: "not delivered within"), "\(transcript)")
        #expect(first.lowerBound < timedOut.lowerBound)

        // SIGINT ends the wait, not the message.
        let waitLog = directory.file("wait.log")
        let waitedID = MessageID.random().hex
        let waiting = try startLogged(
            ["send", "--data-dir", data, "--wait", "--timeout", "600", "--id", waitedID, "carol", "waited for"],
            log: waitLog,
            home: home
        )
        defer { stopProcess(waiting) }
        try await eventually("the message is in the outbox", attempts: 1500) {
            let outbox = try await runScmesh(["outbox", "--data-dir", data, "--full"], home: home)
            return outbox.standardOutput.contains(waitedID)
        }
        kill(waiting.processIdentifier, SIGINT)
        waiting.waitUntilExit()
        #expect(waiting.terminationReason == .exit)
        #expect(waiting.terminationStatus == 130)
        let said = try String(contentsOfFile: waitLog, encoding: .utf8)
        #expect(said.contains("stopped waiting: message \(waitedID) stays queued"), "\(said)")
        let outbox = try await runScmesh(["outbox", "--data-dir", data, "--full"], home: home)
        #expect(outbox.standardOutput.contains(waitedID), "\(outbox.standardOutput)")
    }
}

/// Starts a long-running `scmesh` whose standard output and error go to `log`.
func startLogged(_ arguments: [String], log: String, home: String) throws -> ChildProcess {
    _ = FileManager.default.createFile(atPath: log, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
    defer { try? handle.close() }
    return try ChildProcess(
        executable: scmeshExecutable.path,
        arguments: arguments,
        environment: scmeshEnvironment(home: home),
        standardOutput: .handle(handle),
        standardError: .handle(handle)
    )
}

@Suite("scmesh for a newcomer: two nodes on one machine")
struct FirstHourTwoNodesProcessTests {
    @Test(
        "a second node whose HTTP port is taken serves on a free one and says so; status shows the HTTP address, or why there is none"
    )
    func secondNodeTakesAFreeHTTPPort() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let home = directory.path
        let httpPort = try freeLoopbackPort()
        let (a, b, c) = (directory.file("a"), directory.file("b"), directory.file("c"))
        let logB = directory.file("b.log")
        let common =
            tcpOnlyNodeArguments + [
                "--set", "transports.tcp.listen=127.0.0.1:0", "--set", "http.listen=127.0.0.1:\(httpPort)",
            ]
        let nodeA = try startScmesh(["run", "--data-dir", a] + common, home: home)
        defer { stopProcess(nodeA) }
        let clientA = ControlClient(dataDirectory: a)
        try await eventually("A serves HTTP on its port", attempts: 1500) {
            (try? await clientA.call(.status).decode(StatusReply.self).httpAddress) == "127.0.0.1:\(httpPort)"
        }
        let nodeB = try startLogged(["run", "--data-dir", b] + common, log: logB, home: home)
        defer { stopProcess(nodeB) }
        let clientB = ControlClient(dataDirectory: b)
        var statusB: StatusReply?
        try await eventually("B serves HTTP somewhere", attempts: 1500) {
            statusB = try? await clientB.call(.status).decode(StatusReply.self)
            return statusB?.httpAddress != nil
        }
        let addressB = try #require(statusB?.httpAddress)
        #expect(addressB.hasPrefix("127.0.0.1:") && addressB != "127.0.0.1:\(httpPort)", "\(addressB)")
        #expect(statusB?.httpProblem == nil)
        #expect(statusB?.httpNote?.contains("127.0.0.1:\(httpPort) (http.listen) is in use") == true)
        // Said in the log at warning level, and in the plain status.
        let log = try String(contentsOfFile: logB, encoding: .utf8)
        #expect(
            log.split(separator: "\n").contains {
                $0.contains("warning") && $0.contains("http api listening on http://\(addressB)/")
            },
            "\(log)"
        )
        let text = try await runScmesh(["status", "--data-dir", b], home: home)
        #expect(text.standardOutput.contains("http        http://\(addressB)/"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("is in use"), "\(text.standardOutput)")
        let textA = try await runScmesh(["status", "--data-dir", a], home: home)
        #expect(
            textA.standardOutput.contains("http        http://127.0.0.1:\(httpPort)/ (API"),
            "\(textA.standardOutput)"
        )
        // The dashboard of B is where status says.
        let dashboard = try await runScmesh(["dashboard", "--data-dir", b, "--print-url"], home: home)
        #expect(dashboard.standardOutput.contains("http://\(addressB)/#login="), "\(dashboard.standardOutput)")

        // HTTP off: status says so.
        let nodeC = try startScmesh(
            ["run", "--data-dir", c, "--set", "http.enabled=false"] + tcpOnlyNodeArguments
                + ["--set", "transports.tcp.listen=127.0.0.1:0"],
            home: home
        )
        defer { stopProcess(nodeC) }
        let off = try await runScmesh(["status", "--data-dir", c, "--wait-for-node", "30"], home: home)
        #expect(off.status == 0, "\(off.standardError)")
        #expect(off.standardOutput.contains("http        off (http.enabled: false)"), "\(off.standardOutput)")
    }

    @Test(
        "client commands wait for a node that is starting: --wait-for-node before the node runs, and a held lock"
    )
    func clientsWaitForAStartingNode() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let home = directory.path
        let data = directory.file("a")
        // The client first, the node after it: the client waits for the node.
        let statusLog = directory.file("status.log")
        let status = try startLogged(
            ["status", "--data-dir", data, "--wait-for-node", "60"],
            log: statusLog,
            home: home
        )
        defer { stopProcess(status) }
        let node = try startScmesh(
            ["run", "--data-dir", data, "--set", "transports.tcp.listen=127.0.0.1:0", "--set", "http.enabled=false"]
                + tcpOnlyNodeArguments,
            home: home
        )
        defer { stopProcess(node) }
        status.waitUntilExit()
        let said = try String(contentsOfFile: statusLog, encoding: .utf8)
        #expect(status.terminationStatus == 0, "\(said)")
        #expect(said.contains("relay on"), "\(said)")
        #expect(DataDirectoryLock.isHeld(dataDirectory: data))
        kill(node.processIdentifier, SIGTERM)
        node.waitUntilExit()
        #expect(!DataDirectoryLock.isHeld(dataDirectory: data))

        // A lock held with no socket is a node starting: named as such after the wait.
        let other = directory.file("b")
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        let held = open((other as NSString).appendingPathComponent("node.lock"), O_RDWR | O_CREAT, 0o600)
        try #require(held >= 0)
        defer { close(held) }
        try #require(flock(held, LOCK_EX | LOCK_NB) == 0)
        #expect(DataDirectoryLock.isHeld(dataDirectory: other))
        let starting = try await runScmesh(["status", "--data-dir", other, "--wait-for-node", "0.2"], home: home)
        #expect(starting.status == 1)
        #expect(
            starting.standardError.contains("a node is starting with data dir \(other)"),
            "\(starting.standardError)"
        )
        // Without a lock nothing is waited for; the hint names the data directory.
        let none = try await runScmesh(["status", "--data-dir", directory.file("c")], home: home)
        #expect(none.status == 1)
        #expect(
            none.standardError.contains("start one with `scmesh run --data-dir \(directory.file("c"))`"),
            "\(none.standardError)"
        )
    }
}

@Suite("scmesh for a newcomer: small things")
struct FirstHourSmallThingsProcessTests {
    @Test(
        "durations for send, clear limits, the run-time relay hint, duplicate and unprintable aliases, a bad listen address at its own line, the lock error first"
    )
    func smallThings() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let home = directory.path
        let data = directory.file("a")
        let node = try startScmesh(
            ["run", "--data-dir", data, "--set", "transports.tcp.listen=127.0.0.1:0", "--set", "http.enabled=false"]
                + tcpOnlyNodeArguments,
            home: home
        )
        defer { stopProcess(node) }
        let client = ControlClient(dataDirectory: data)
        try await eventually("the node answers", attempts: 1500) { try await client.call(.status).ok }
        #expect(
            try await runScmesh(["contacts", "add", "--data-dir", data, "carol", strangerPeerHex], home: home).status
                == 0
        )

        // --timeout 0: the range says what it takes, the number as typed.
        let zero = try await runScmesh(["send", "--data-dir", data, "--timeout", "0", "carol", "x"], home: home)
        #expect(zero.status == 1)
        #expect(zero.standardError.contains("--timeout must be longer than 0"), "\(zero.standardError)")
        let socketZero = try await client.call(.send(SendRequest(peer: "carol", text: "x", timeoutSeconds: 0)))
        #expect(socketZero.error?.contains("above 0 and at most 86400 (one day), got 0") == true, "\(socketZero.line)")
        // --expires takes a duration, as invite --expires does.
        let hour = try await runScmesh(
            ["send", "--data-dir", data, "--json", "--expires", "1h", "carol", "x"],
            home: home
        )
        #expect(hour.status == 0, "\(hour.standardOutput) \(hour.standardError)")
        let id = try #require(try jsonObject(hour.standardOutput)["message_id"] as? String)
        let entry = try await client.call(.trace(id: id)).decode(TraceReply.self).message.entry
        let expiry = try #require(entry.expiresAt).timeIntervalSince(entry.createdAt)
        #expect(abs(expiry - 3600) < 1, "\(expiry)")

        // inbox --limit 0 is a usage error, not an empty inbox.
        let limit = try await runScmesh(["inbox", "--data-dir", data, "--limit", "0"], home: home)
        #expect(limit.status == 64)
        #expect(limit.standardError.contains("--limit takes the number of newest messages"), "\(limit.standardError)")

        // A duplicate contact names the command that changes its alias; ESC is refused.
        let again = try await runScmesh(["contacts", "add", "--data-dir", data, "dave", strangerPeerHex], home: home)
        #expect(again.status == 1)
        #expect(again.standardError.contains("`scmesh contacts remove carol`"), "\(again.standardError)")
        #expect(!again.standardError.contains("save the contact"))
        let escape = try await runScmesh(
            ["contacts", "add", "--data-dir", data, "ev\u{1B}[2Jil", NodeIdentityProbe.peerHex],
            home: home
        )
        #expect(escape.status == 1)
        #expect(escape.standardError.contains("cannot hold control characters"), "\(escape.standardError)")
        #expect(escape.standardError.contains("U+1B"), "\(escape.standardError)")

        // Relay switched off at run time: the hint is the run-time switch.
        #expect(try await runScmesh(["settings", "--data-dir", data, "--relay", "off"], home: home).status == 0)
        let off = try await runScmesh(["send", "--data-dir", data, "carol", "x"], home: home)
        #expect(off.status == 1)
        #expect(off.standardError.contains("`scmesh settings --relay on`"), "\(off.standardError)")

        // A second run on the same data dir: the lock error, and no exposure note before it.
        let second = try await runScmesh(
            ["run", "--data-dir", data, "--set", "transports.tcp.listen=0.0.0.0:0"] + tcpOnlyNodeArguments,
            home: home
        )
        #expect(second.status == 1)
        #expect(
            second.standardError.hasPrefix("scmesh: another node is running with data dir"),
            "\(second.standardError)"
        )
        #expect(!second.standardError.contains("note:"), "\(second.standardError)")

        // A bad listen address is reported at the line of its own key.
        let file = directory.file("bad.yaml")
        try "relay: {enabled: true}\ntransports:\n  tcp:\n    enabled: true\n\n    listen: [\"127.0.0.1:99999\"]\n"
            .write(toFile: file, atomically: true, encoding: .utf8)
        let bad = try await runScmesh(["config", "check", file], home: home)
        #expect(bad.status == 1)
        #expect(bad.standardError.contains("(from \(file) line 6)"), "\(bad.standardError)")

        // One of a thing is singular.
        let published = TextReport.published(
            PublishReply(messageID: MessageID.random(), topic: "/t", bytes: 1, meshPeers: 1)
        )
        #expect(published.hasSuffix("(1 bytes, 1 mesh peer)") || published.hasSuffix("(1 byte, 1 mesh peer)"))
    }
}

/// A second valid Ed25519 public key no node here has (RFC 8032, test 2).
enum NodeIdentityProbe {
    static let peerHex = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
}

extension FirstHourSmallThingsProcessTests {
    @Test("a data dir too long for the control socket is refused before anything is created in it")
    func dataDirectoryTooLong() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        // 91 bytes: one more than the longest that works.
        let long = directory.file(String(repeating: "d", count: 89 - directory.path.utf8.count))
        let tooLong = long + "x"
        #expect(tooLong.utf8.count == 91)
        let run = try await runScmesh(
            ["run", "--data-dir", tooLong, "--set", "http.enabled=false"] + tcpOnlyNodeArguments,
            home: directory.path
        )
        #expect(run.status == 1)
        #expect(run.standardError.contains("is 91 bytes long"), "\(run.standardError)")
        #expect(run.standardError.contains("at most 90 bytes"), "\(run.standardError)")
        #expect(!FileManager.default.fileExists(atPath: tooLong))
    }
}

extension FirstHourTwoNodesProcessTests {
    @Test("inbox, peers and routes name a contact by its alias and 8 hex characters (--full: the whole ID)")
    func inboxNamesContacts() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let home = directory.path
        let (a, b) = (directory.file("a"), directory.file("b"))
        let port = try freeLoopbackPort()
        let common = tcpOnlyNodeArguments + ["--set", "http.enabled=false"]
        let nodeA = try startScmesh(
            ["run", "--data-dir", a, "--set", "transports.tcp.listen=127.0.0.1:\(port)"] + common,
            home: home
        )
        defer { stopProcess(nodeA) }
        let nodeB = try startScmesh(
            [
                "run", "--data-dir", b, "--set", "transports.tcp.listen=127.0.0.1:0",
                "--set", "transports.tcp.bootstrap=127.0.0.1:\(port)",
            ] + common,
            home: home
        )
        defer { stopProcess(nodeB) }
        let statusA = try await runScmesh(["status", "--json", "--data-dir", a, "--wait-for-node", "30"], home: home)
        let idA = try #require(try jsonObject(statusA.standardOutput)["peer"] as? String)
        let statusB = try await runScmesh(["status", "--json", "--data-dir", b, "--wait-for-node", "30"], home: home)
        let idB = try #require(try jsonObject(statusB.standardOutput)["peer"] as? String)
        #expect(try await runScmesh(["contacts", "add", "--data-dir", b, "alice", idA], home: home).status == 0)
        let sent = try await runScmesh(["send", "--data-dir", a, "--timeout", "30", idB, "hi b"], home: home)
        #expect(sent.status == 0, "\(sent.standardError)")

        let text = try await runScmesh(["inbox", "--data-dir", b], home: home)
        #expect(text.standardOutput.contains("from alice (\(idA.prefix(8))…)  via tcp"), "\(text.standardOutput)")
        #expect(!text.standardOutput.contains(idA), "\(text.standardOutput)")
        let full = try await runScmesh(["inbox", "--data-dir", b, "--full"], home: home)
        #expect(full.standardOutput.contains("from alice (\(idA))"), "\(full.standardOutput)")
        let json = try jsonObject(try await runScmesh(["inbox", "--data-dir", b, "--json"], home: home).standardOutput)
        let message = try #require((json["messages"] as? [[String: Any]])?.first)
        #expect(message["alias"] as? String == "alice")
        #expect(message["peer"] as? String == idA)

        // peers and routes name her the same way.
        for command in ["peers", "routes"] {
            let listed = try await runScmesh([command, "--data-dir", b], home: home)
            #expect(listed.standardOutput.contains("alice (\(idA.prefix(8))…)"), "\(listed.standardOutput)")
            #expect(!listed.standardOutput.contains(idA), "\(listed.standardOutput)")
            let whole = try await runScmesh([command, "--data-dir", b, "--full"], home: home)
            #expect(whole.standardOutput.contains("alice (\(idA))"), "\(whole.standardOutput)")
        }
        let routes = try jsonObject(
            try await runScmesh(["routes", "--data-dir", b, "--json"], home: home).standardOutput
        )
        #expect((routes["aliases"] as? [String: String])?[idA] == "alice", "\(routes)")
    }
}
