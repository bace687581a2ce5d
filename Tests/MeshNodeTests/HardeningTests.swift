import Foundation
import MeshCore
import MeshCrypto
import MeshNode
import MeshTesting
import TestSupport
import Testing

/// A raw Unix-socket client that writes and never reads (unless asked).
private struct RawControlSocket {
    let descriptor: Int32

    init(path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let descriptor = descriptor
        let connected = withUnixSocketAddress(path) { connect(descriptor, $0, $1) }
        guard connected == 0 else {
            throw MeshError(.invalidArgument, "connect failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Writes what the socket takes without blocking; returns the bytes written.
    func writeNonBlocking(_ bytes: [UInt8]) -> Int {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(descriptor, F_SETFL, flags) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { break }
            offset += written
        }
        return offset
    }

    /// Whether the node closed the connection, without reading (a read would let the
    /// node's writes go on).
    var isClosedByPeer: Bool {
        var descriptor = pollfd(fd: descriptor, events: Int16(0x2000), revents: 0)  // 0x2000: POLLRDHUP
        guard poll(&descriptor, 1, 0) == 1 else { return false }
        return descriptor.revents & Int16(POLLHUP | 0x2000) != 0
    }

    func close() { _ = Glibc.close(descriptor) }
}

@Suite("Control socket and node hardening")
struct HardeningTests {
    @Test("unknown request fields are refused like unknown config keys, in the socket's own words")
    func unknownFields() async throws {
        let node = try await RunningNode.start(yaml: "relay: {enabled: true}")
        defer { node.directory.cleanUp() }
        let typo = try ControlReply(line: try await node.client.exchange(Array(#"{"cmd":"inbox","limt":5}"#.utf8)))
        #expect(typo.ok == false)
        #expect(typo.code == MeshError.Code.controlRequestFailed.name)
        #expect(
            typo.error
                == #"unknown request field "limt" (known fields: cmd, peer, text, payload_base64, after, limit, id, message_id, expires_seconds, wait, timeout_seconds, alias, note, on, topic, relay_enabled, invitation, relay_max_per_hour, relay_neighbour_share, relay_battery_floor_percent, emergency, discovery_mode, payloads, transport, address, new_alias, reset, unread, grep, ids, all, seq, power_override, clear_overrides, profile, auto)"#
        )
        let wrongType = try ControlReply(
            line: try await node.client.exchange(Array(#"{"cmd":"send","wait":"yes"}"#.utf8))
        )
        #expect(wrongType.error == #"request field "wait" must be true or false"#)
        // Decoder internals (type names, coding paths, "Swift.DecodingError") never reach the reply.
        for line in [
            #"{"cmd": 5}"#, #"{"cmd":"inbox","after":"x"}"#, "[1]", #"{"peer":"x"}"#, "{\"cmd\":", #"{"cmd":null}"#,
        ] {
            let reply = try ControlReply(line: try await node.client.exchange(Array(line.utf8)))
            let error = try #require(reply.error)
            #expect(
                !error.contains("DecodingError") && !error.contains("CodingKeys") && !error.contains("Swift."),
                "\(line) -> \(error)"
            )
            #expect(error.hasPrefix("request "), "\(line) -> \(error)")
        }
        try await node.stop()
    }

    @Test("a client that never reads its replies stalls no one and is dropped after the write timeout")
    func nonReadingClient() async throws {
        let node = try await RunningNode.start(
            yaml: "relay: {enabled: true}",
            overrides: ["node.control_max_connections=4", "node.control_write_timeout_ms=300"]
        )
        defer { node.directory.cleanUp() }
        let greedy = try RawControlSocket(path: node.client.socketPath)
        defer { greedy.close() }
        // Requests whose replies fill the socket buffers: the node's writes back up.
        let requests = Array(String(repeating: #"{"cmd":"status"}"# + "\n", count: 20_000).utf8)
        #expect(greedy.writeNonBlocking(requests) > 0)
        // Others are served meanwhile (the second of two connections).
        for _ in 0..<5 {
            let reply = try await node.client.call(.status)
            #expect(reply.ok, "\(reply.line)")
        }
        // ...and the greedy client is dropped once a reply waited past the timeout.
        try await eventually("the node drops the client that does not read", attempts: 1_500) { greedy.isClosedByPeer }
        #expect(try await node.client.call(.status).ok)
        try await node.stop()
    }

    @Test("connections over node.control_max_connections are answered with an error naming the key, then served again")
    func connectionLimit() async throws {
        let node = try await RunningNode.start(
            yaml: "relay: {enabled: true}\nnode: {control_max_connections: 1}"
        )
        defer { node.directory.cleanUp() }
        let idle = try RawControlSocket(path: node.client.socketPath)
        try await eventually("the idle connection holds the only slot", attempts: 1_500) {
            let reply = try await node.client.call(.status)
            return !reply.ok && reply.error?.contains("node.control_max_connections") == true
        }
        idle.close()
        // The slot frees once the node saw the previous connection close, which may come
        // a moment after that client had its reply: poll.
        var status: StatusReply?
        try await eventually("the slot is free again", attempts: 1_500) {
            status = try await node.client.call(.status).decode(StatusReply.self)
            return true
        }
        #expect((status?.transportCounters?["control"]?["refused.control_max_connections"] ?? 0) >= 1)
        try await node.stop()
    }

    @Test("a request over the line limit is refused at once with messageTooLarge naming the limit and max_message_size")
    func overLimitRequest() async throws {
        let node = try await RunningNode.start(yaml: "relay: {enabled: true}\nmax_message_size: 100000")
        defer { node.directory.cleanUp() }
        let limit = (100_000 + 2) / 3 * 4 + 65_536
        // 4 MB: far over the limit; the reply comes although the node stops reading.
        let payload = [UInt8](repeating: 0x41, count: 3_000_000)
        let reply = try await node.client.call(
            NodeCommand.send(
                SendRequest(
                    peer: NodeIdentity.generate().peerID.hex,
                    payloadBase64: Data(payload).base64EncodedString()
                )
            )
        )
        #expect(reply.ok == false)
        #expect(reply.code == MeshError.Code.messageTooLarge.name, "\(reply.line)")
        #expect(reply.error?.contains("\(limit) bytes") == true, "\(reply.line)")
        #expect(reply.error?.contains("max_message_size = 100000") == true, "\(reply.line)")
        let status = try await node.client.call(.status).decode(StatusReply.self)
        #expect(status.transportCounters?["control"]?["refused.request_too_large"] == 1)
        try await node.stop()
    }

    @Test("the line decoder reads a long request in many pieces (linear: each byte scanned once)")
    func longLineInPieces() async throws {
        let node = try await RunningNode.start(yaml: "relay: {enabled: true}")
        defer { node.directory.cleanUp() }
        // 12 MB of base64 for an unknown peer: read whole, decoded, queued for later.
        let payload = [UInt8](repeating: 7, count: 9_000_000)
        let reply = try await node.client.call(
            NodeCommand.send(
                SendRequest(
                    peer: NodeIdentity.generate().peerID.hex,
                    payloadBase64: Data(payload).base64EncodedString()
                )
            )
        )
        #expect(reply.ok, "\(reply.line.prefix(300))")
        #expect(try reply.decode(SendReply.self).bytes == payload.count)
        try await node.stop()
    }

    @Test("control characters in remote data print visibly escaped; --json stays exact")
    func escaping() throws {
        #expect(TextReport.escaped("\u{1B}[2J") == #"\u{1B}[2J"#)
        #expect(TextReport.escaped("\u{1B}]0;owned\u{07}") == #"\u{1B}]0;owned\u{7}"#)
        #expect(
            TextReport.escaped("tab\tstays, é stays, \u{202E}rtl")
                == #"tab\tstays, é stays, \u{202E}rtl"#.replacingOccurrences(of: #"\t"#, with: "\t")
        )
        #expect(TextReport.escaped("a\nb", newlines: "\n  ") == "a\n  b")
        #expect(TextReport.escaped("a\r\nb") == #"a\u{D}\u{A}b"#)
        let hostile = "\u{1B}[2J\u{1B}]0;title\u{07}hi\nthere"
        let quoted = String(decoding: try JSONEncoder().encode(hostile), as: UTF8.self)
        let json = """
            {"ok":true,"total_received":1,"messages":[{"seq":1,"message_id":"\(MessageID.random().hex)","peer":"\(PeerID.random().hex)",
            "transport":"tcp","received_at":"2026-11-22T06:32:34Z","bytes":20,"text":\(quoted),"payload_base64":""}]}
            """
        let reply = try ControlReply(line: Array(json.utf8))
        #expect(reply.line.contains(#"\u001b[2J"#))  // the JSON itself stays exact JSON
        let text = TextReport.inbox(try reply.decode(InboxReply.self))
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(text.contains(#"\u{1B}[2J\u{1B}]0;title\u{7}hi"#))
        #expect(text.contains("\n    there"))
    }
}

/// A TCP port on 127.0.0.1 that nobody listens on now (see ``freeLoopbackPort()``).
func freeTCPPort() throws -> Int { try freeLoopbackPort() }

@Suite("scmesh process hardening")
struct ProcessHardeningTests {
    private func environment(_ home: String) -> [String: String] {
        var environment = scmeshEnvironment(home: home)
        environment["SCMESH_TRANSPORTS_MDNS_ENABLED"] = "false"
        environment["SCMESH_TRANSPORTS_BLE_ENABLED"] = "false"
        environment["SCMESH_TRANSPORTS_TCP_LISTEN"] = "127.0.0.1:0"
        return environment
    }

    private func launch(_ arguments: [String], home: String, standardError: Pipe = Pipe()) throws -> ChildProcess {
        try ChildProcess(
            executable: scmeshExecutable.path,
            arguments: arguments,
            environment: environment(home),
            standardError: .pipe(standardError)
        )
    }

    private func scmesh(_ arguments: [String], home: String, input: [UInt8]? = nil) async throws -> ScmeshResult {
        try await runScmesh(arguments, environment: environment(home), input: input)
    }

    @Test(
        "a second scmesh run on a locked data dir fails with one clear line, even without control.sock; SIGHUP stops the node cleanly"
    )
    func lockAndSIGHUP() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: scmeshExecutable.path))
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let data = directory.file("data")
        let node = try launch(["run", "--data-dir", data], home: directory.path)
        defer { if node.isRunning { node.terminate() } }
        try await eventually("the node answers") {
            try await scmesh(["status", "--data-dir", data], home: directory.path).status == 0
        }
        #expect(FileManager.default.fileExists(atPath: (data as NSString).appendingPathComponent("node.lock")))

        try FileManager.default.removeItem(atPath: DataDirectory.controlSocketPath(data))
        let second = try await scmesh(["run", "--data-dir", data], home: directory.path)
        #expect(second.status == 1)
        let lines = second.standardError.split(separator: "\n")
        #expect(lines.count == 1, "\(second.standardError)")
        #expect(
            lines.first?.hasPrefix("scmesh: another node is running with data dir \(data)") == true,
            "\(second.standardError)"
        )

        kill(node.processIdentifier, SIGHUP)
        try await eventually("scmesh run exits after SIGHUP") { !node.isRunning }
        #expect(node.terminationReason == .exit)
        #expect(node.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: DataDirectory.controlSocketPath(data)))
        // The lock went with the process: a new node starts.
        let third = try launch(["run", "--data-dir", data], home: directory.path)
        defer { if third.isRunning { third.terminate() } }
        try await eventually("a new node answers") {
            try await scmesh(["status", "--data-dir", data], home: directory.path).status == 0
        }
        kill(third.processIdentifier, SIGTERM)
        try await eventually("it exits") { !third.isRunning }
    }

    @Test(
        "a 10 MB scmesh send - goes through, scmesh inbox prints it with escapes; an over-limit one is refused at once"
    )
    func tenMegabytes() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: scmeshExecutable.path))
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let port = try freeTCPPort()
        let a = directory.file("a")
        let b = directory.file("b")
        // HTTP on free ports: `send -` posts the raw payload to the HTTP API.
        let nodeA = try launch(
            [
                "run", "--data-dir", a, "--set", "transports.tcp.listen=127.0.0.1:\(port)", "--set",
                "http.listen=127.0.0.1:0",
            ],
            home: directory.path
        )
        defer { if nodeA.isRunning { nodeA.terminate() } }
        let nodeB = try launch(
            [
                "run", "--data-dir", b, "--set", "transports.tcp.bootstrap=127.0.0.1:\(port)", "--set",
                "max_message_size=12000000",
                "--set", "http.listen=127.0.0.1:0",
            ],
            home: directory.path
        )
        defer { if nodeB.isRunning { nodeB.terminate() } }
        let idB = try await scmesh(["identity", "--create", "--data-dir", b], home: directory.path).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let idA = try await scmesh(["identity", "--create", "--data-dir", a], home: directory.path).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try await eventually("A has a link to B") {
            try await scmesh(["peers", "--data-dir", a, "--full"], home: directory.path).standardOutput.contains(idB)
        }
        var payload = Array("\u{1B}[2J\u{1B}]0;owned\u{07}".utf8)
        payload += [UInt8](repeating: UInt8(ascii: "x"), count: 10_000_000 - payload.count)
        let sent = try await scmesh(["send", "--data-dir", a, idB, "-"], home: directory.path, input: payload)
        #expect(sent.status == 0, "\(sent.standardError)")
        try await eventually("B holds the message") {
            try await scmesh(["inbox", "--data-dir", b, "--json", "--limit", "0"], home: directory.path).standardOutput
                .contains("\"total_received\":1")
        }
        // The listing carries the payload's first 1 KiB only (a one-line text: all of
        // it is shown); --payloads all of it.
        let inbox = try await scmesh(["inbox", "--data-dir", b], home: directory.path)
        #expect(inbox.status == 0)
        #expect(inbox.standardOutput.contains(#"\u{1B}[2J\u{1B}]0;owned\u{7}xxx"#))
        #expect(!inbox.standardOutput.utf8.contains(0x1B))
        #expect(
            inbox.standardOutput.contains("xxx…\n    (10000000 bytes in all; --save DIR writes them to a file)"),
            "\(inbox.standardOutput.suffix(200))"
        )
        #expect(inbox.standardOutput.utf8.count < 2_000)
        let whole = try await scmesh(["inbox", "--data-dir", b, "--payloads"], home: directory.path)
        #expect(whole.status == 0, "\(whole.standardError)")
        #expect(whole.standardOutput.contains(#"\u{1B}[2J\u{1B}]0;owned\u{7}xxx"#))
        #expect(!whole.standardOutput.utf8.contains(0x1B))
        #expect(whole.standardOutput.utf8.count > 10_000_000)

        // B's limit is 12,000,000 bytes: 13 MB is refused up front, naming the key.
        let tooLarge = try await scmesh(
            ["send", "--data-dir", b, idA, "-"],
            home: directory.path,
            input: [UInt8](repeating: 1, count: 13_000_000)
        )
        #expect(tooLarge.status == 1)
        // From a pipe the CLI stops reading at the node's limit, naming it.
        #expect(
            tooLarge.standardError.hasPrefix(
                "scmesh: standard input holds more than the node's max_message_size of 12000000 bytes"
            ),
            "\(tooLarge.standardError)"
        )
        #expect(tooLarge.standardError.contains("nothing was queued"))
        #expect(tooLarge.standardError.split(separator: "\n").count == 1)
        // From a file it goes over the HTTP API with its length, which the node refuses
        // before reading the body, naming the size and the limit.
        let file = directory.file("large.bin")
        try Data(count: 13_000_000).write(to: URL(fileURLWithPath: file))
        let fromFile = try await runScmesh(
            ["send", "--data-dir", b, idA, "-"],
            home: directory.path,
            standardInput: file
        )
        #expect(fromFile.status == 1)
        #expect(
            fromFile.standardError.hasPrefix("scmesh: the body (13000000 bytes) is larger than 12000000 bytes"),
            "\(fromFile.standardError)"
        )
        #expect(fromFile.standardError.contains("max_message_size): nothing was queued"))
        #expect(fromFile.standardError.split(separator: "\n").count == 1)

        for node in [nodeA, nodeB] { kill(node.processIdentifier, SIGTERM) }
        try await eventually("both exit") { !nodeA.isRunning && !nodeB.isRunning }
    }
}
