import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

/// An environment with no `SCMESH_*` variables and `HOME` set to `home`.
private func cleanEnvironment(home: String) -> [String: String] {
    var environment = scmeshEnvironment(home: home)
    // The default config, but on ports and service types no other test uses:
    // TCP on a free port, mDNS on loopback under its own service type.
    environment["SCMESH_TRANSPORTS_TCP_LISTEN"] = "127.0.0.1:0"
    environment["SCMESH_TRANSPORTS_MDNS_INTERFACES"] = "lo"
    environment["SCMESH_TRANSPORTS_MDNS_LISTEN"] = "127.0.0.1:0"
    environment["SCMESH_TRANSPORTS_MDNS_SERVICE_TYPE"] = "_scmeshtest._tcp"
    return environment
}

private func launch(
    _ arguments: [String],
    home: String,
    standardOutput: Pipe = Pipe(),
    standardError: Pipe = Pipe()
) throws -> ChildProcess {
    try ChildProcess(
        executable: scmeshExecutable.path,
        arguments: arguments,
        environment: cleanEnvironment(home: home),
        standardOutput: .pipe(standardOutput),
        standardError: .pipe(standardError)
    )
}

/// Runs `scmesh` to completion, with `input` on its standard input.
private func scmesh(_ arguments: String..., home: String, input: [UInt8]? = nil) async throws -> ScmeshResult {
    try await runScmesh(arguments, environment: cleanEnvironment(home: home), input: input)
}

@Suite("scmesh process")
struct ProcessTests {
    @Test("scmesh run on the default config (no loopback transport) answers status --json and exits 0 on SIGTERM")
    func runStatusTerminate() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let dataDirectory = directory.file("data")
        let log = Pipe()
        let node = try launch(["run", "--data-dir", dataDirectory], home: directory.path, standardError: log)
        defer { if node.isRunning { node.terminate() } }

        // The control socket answers while the transports still start (status shows
        // them "starting"), so this waits for the TCP transport to be past that.
        var status: ScmeshResult?
        try await eventually("scmesh status --json answers, with the TCP transport started (or failed)") {
            let attempt = try await scmesh("status", "--json", "--data-dir", dataDirectory, home: directory.path)
            status = attempt
            guard attempt.status == 0,
                let object = try? JSONSerialization.jsonObject(with: Data(attempt.standardOutput.utf8))
                    as? [String: Any],
                let transports = object["transports"] as? [[String: Any]]
            else { return false }
            return transports.contains { $0["name"] as? String == "tcp" && $0["state"] as? String != "starting" }
        }
        let reply = try #require(status)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(reply.standardOutput.utf8)) as? [String: Any]
        )
        #expect(object["ok"] as? Bool == true)
        let identity = try await scmesh("identity", "--data-dir", dataDirectory, home: directory.path)
        #expect(identity.status == 0)
        #expect(object["peer"] as? String == identity.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        let transports = try #require(object["transports"] as? [[String: Any]])
        // The in-process loopback transport is not in the default config: two
        // processes can never meet on it.
        #expect(transports.compactMap { $0["name"] as? String } == ["mdns", "ble", "tcp"])

        let human = try await scmesh("status", "--data-dir", dataDirectory, home: directory.path)
        #expect(human.status == 0)
        #expect(human.standardOutput.hasPrefix("(no name)  ") && human.standardOutput.contains("\nrelay on · "))

        kill(node.processIdentifier, SIGTERM)
        try await eventually("scmesh run exits after SIGTERM") { !node.isRunning }
        #expect(node.terminationReason == .exit)
        #expect(node.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: DataDirectory.controlSocketPath(dataDirectory)))

        let after = try await scmesh("status", "--data-dir", dataDirectory, home: directory.path)
        #expect(after.status != 0)
        #expect(after.standardError.contains("no node is running with data dir \(dataDirectory)"))
        _ = log.fileHandleForReading.readDataToEndOfFile()
    }

    @Test("two scmesh processes exchange a message over TCP on loopback; send - reads the payload from stdin")
    func twoProcessesOverTCP() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let port = try freeLoopbackPort()
        let only = ["--set", "transports.mdns.enabled=false", "--set", "transports.ble.enabled=false"]
        let a = directory.file("a")
        let b = directory.file("b")
        let nodeA = try launch(
            ["run", "--data-dir", a, "--set", "transports.tcp.listen=127.0.0.1:\(port)"] + only,
            home: directory.path
        )
        defer { if nodeA.isRunning { nodeA.terminate() } }
        let nodeB = try launch(
            [
                "run", "--data-dir", b, "--set", "transports.tcp.listen=127.0.0.1:0",
                "--set", "transports.tcp.bootstrap=127.0.0.1:\(port)",
            ] + only,
            home: directory.path
        )
        defer { if nodeB.isRunning { nodeB.terminate() } }

        let idA = try await scmesh("identity", "--create", "--data-dir", a, home: directory.path).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let idB = try await scmesh("identity", "--create", "--data-dir", b, home: directory.path).standardOutput
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try await eventually("node A has a link to node B") {
            try await scmesh("peers", "--data-dir", a, "--full", home: directory.path).standardOutput.contains(idB)
        }
        let payload: [UInt8] = Array("bytes from stdin\n".utf8) + [0, 0xFF]
        let sent = try await scmesh("send", "--data-dir", a, "--json", idB, "-", home: directory.path, input: payload)
        #expect(sent.status == 0, "\(sent.standardOutput) \(sent.standardError)")
        let text = try await scmesh("send", "--data-dir", a, idB, "hello over tcp", home: directory.path)
        #expect(text.status == 0, "\(text.standardError)")
        #expect(text.standardOutput.hasPrefix("queued message "))

        var inbox: [[String: Any]] = []
        try await eventually("node B's inbox has both messages") {
            let reply = try await scmesh("inbox", "--data-dir", b, "--json", "--payloads", home: directory.path)
            let object = try JSONSerialization.jsonObject(with: Data(reply.standardOutput.utf8)) as? [String: Any]
            inbox = object?["messages"] as? [[String: Any]] ?? []
            return inbox.count == 2
        }
        #expect(inbox[0]["peer"] as? String == idA)
        #expect(inbox[0]["transport"] as? String == "tcp")
        #expect((inbox[0]["payload_base64"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init) == payload)
        #expect(inbox[1]["text"] as? String == "hello over tcp")

        for node in [nodeA, nodeB] { kill(node.processIdentifier, SIGTERM) }
        try await eventually("both nodes exit") { !nodeA.isRunning && !nodeB.isRunning }
        #expect(nodeA.terminationStatus == 0)
        #expect(nodeB.terminationStatus == 0)
    }

    @Test("scmesh config check prints the effective config, or one line naming the bad key and exits non-zero")
    func configCheck() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let good = directory.file("good.yaml")
        try "relay:\n  enabled: true\n".write(toFile: good, atomically: true, encoding: .utf8)
        let valid = try await scmesh(
            "config",
            "check",
            good,
            "--set",
            "escalation.max_attempts=7",
            "--set",
            "routing.max_hops=5",
            home: directory.path
        )
        #expect(valid.status == 0, "\(valid.standardError)")
        #expect(valid.standardOutput.contains("max_attempts: 7"))
        #expect(valid.standardOutput.contains("routing:\n  announce_interval_ms: 3600000\n"), "\(valid.standardOutput)")
        #expect(
            valid.standardOutput.contains("  max_hops: 5\n  route_max_age_ms: 12000000\n"),
            "\(valid.standardOutput)"
        )
        #expect(valid.standardOutput.contains("relay:\n  enabled: true"))

        let bad = directory.file("bad.yaml")
        try "escalation:\n  max_attempts: lots\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let invalid = try await scmesh("config", "check", bad, home: directory.path)
        #expect(invalid.status != 0)
        #expect(invalid.standardOutput.isEmpty)
        #expect(
            invalid.standardError.contains("escalation.max_attempts: expected an integer"),
            "\(invalid.standardError)"
        )
        #expect(invalid.standardError.split(separator: "\n").count == 1)
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
private func freeLoopbackPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw MeshError(.invalidArgument, "socket failed") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
        }
    }
    guard bound else { throw MeshError(.invalidArgument, "bind failed: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}
