import Foundation
import MeshCore
import MeshNode
import Testing

/// The `scmesh` executable next to this test binary (`swift test` builds it).
private var scmeshBinary: URL {
    let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    return testBinary.deletingLastPathComponent().appendingPathComponent("scmesh")
}

/// The result of one `scmesh` invocation.
private struct Invocation {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// An environment with no `SCMESH_*` variables and `HOME` set to `home`.
private func cleanEnvironment(home: String) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SCMESH_") }
    environment["HOME"] = home
    environment["XDG_DATA_HOME"] = nil
    // Keep the default config's mDNS on loopback, under a service type no other test browses.
    environment["SCMESH_TRANSPORTS_MDNS_INTERFACES"] = "lo"
    environment["SCMESH_TRANSPORTS_MDNS_LISTEN"] = "127.0.0.1:0"
    environment["SCMESH_TRANSPORTS_MDNS_SERVICE_TYPE"] = "_scmeshtest._tcp"
    return environment
}

private func launch(_ arguments: [String], home: String, standardOutput: Pipe = Pipe(), standardError: Pipe = Pipe()) throws -> Process {
    let process = Process()
    process.executableURL = scmeshBinary
    process.arguments = arguments
    process.environment = cleanEnvironment(home: home)
    process.standardOutput = standardOutput
    process.standardError = standardError
    process.standardInput = FileHandle.nullDevice
    try process.run()
    return process
}

/// Runs `scmesh` to completion.
private func scmesh(_ arguments: String..., home: String) throws -> Invocation {
    let output = Pipe()
    let errors = Pipe()
    let process = try launch(arguments, home: home, standardOutput: output, standardError: errors)
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return Invocation(
        status: process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
        standardError: String(decoding: errorData, as: UTF8.self))
}

@Suite("scmesh process")
struct ProcessTests {
    @Test("scmesh run on the default config answers status --json and exits 0 on SIGTERM")
    func runStatusTerminate() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: scmeshBinary.path), "build scmesh first: \(scmeshBinary.path)")
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let dataDirectory = directory.file("data")
        let log = Pipe()
        let node = try launch(["run", "--data-dir", dataDirectory], home: directory.path, standardError: log)
        defer { if node.isRunning { node.terminate() } }

        var status: Invocation?
        try await eventually("scmesh status --json answers") {
            let attempt = try scmesh("status", "--json", "--data-dir", dataDirectory, home: directory.path)
            status = attempt
            return attempt.status == 0
        }
        let reply = try #require(status)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(reply.standardOutput.utf8)) as? [String: Any])
        #expect(object["ok"] as? Bool == true)
        let identity = try scmesh("identity", "--data-dir", dataDirectory, home: directory.path)
        #expect(identity.status == 0)
        #expect(object["peer_id"] as? String == identity.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
        let transports = try #require(object["transports"] as? [[String: Any]])
        #expect(transports.compactMap { $0["name"] as? String } == ["loopback", "mdns", "ble", "tcp"])
        let loopback = try #require(transports.first { $0["name"] as? String == "loopback" })
        #expect(loopback["state"] as? String == "running")

        let human = try scmesh("status", "--data-dir", dataDirectory, home: directory.path)
        #expect(human.status == 0)
        #expect(human.standardOutput.contains("relay       on"))

        kill(node.processIdentifier, SIGTERM)
        try await eventually("scmesh run exits after SIGTERM") { !node.isRunning }
        #expect(node.terminationReason == .exit)
        #expect(node.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: DataDirectory.controlSocketPath(dataDirectory)))

        let after = try scmesh("status", "--data-dir", dataDirectory, home: directory.path)
        #expect(after.status != 0)
        #expect(after.standardError.contains("no node is running with data dir \(dataDirectory)"))
        _ = log.fileHandleForReading.readDataToEndOfFile()
    }

    @Test("scmesh config check prints the effective config, or one line naming the bad key and exits non-zero")
    func configCheck() throws {
        try #require(FileManager.default.isExecutableFile(atPath: scmeshBinary.path), "build scmesh first: \(scmeshBinary.path)")
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let good = directory.file("good.yaml")
        try "relay:\n  enabled: true\n".write(toFile: good, atomically: true, encoding: .utf8)
        let valid = try scmesh("config", "check", good, "--set", "escalation.max_attempts=7", home: directory.path)
        #expect(valid.status == 0, "\(valid.standardError)")
        #expect(valid.standardOutput.contains("max_attempts: 7"))
        #expect(valid.standardOutput.contains("relay:\n  enabled: true"))

        let bad = directory.file("bad.yaml")
        try "escalation:\n  max_attempts: lots\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let invalid = try scmesh("config", "check", bad, home: directory.path)
        #expect(invalid.status != 0)
        #expect(invalid.standardOutput.isEmpty)
        #expect(invalid.standardError.contains("escalation.max_attempts: expected an integer"), "\(invalid.standardError)")
        #expect(invalid.standardError.split(separator: "\n").count == 1)
    }
}
