import Foundation
import MeshCore
import MeshNode
import Synchronization

// Helpers for tests that run `scmesh` processes over TCP on loopback.

func systemError(_ call: String) -> MeshError {
    MeshError(.invalidArgument, "\(call) failed: \(String(cString: strerror(errno)))")
}

/// Ports handed out by ``unusedLoopbackPort()``: below Linux's ephemeral range
/// (32768–60999), so no outgoing connection of a test running in parallel can take one
/// between the moment it is chosen and the moment a node listens on it (again, after a
/// restart). A port from `bind(0)` is in that range, where under a loaded full suite a
/// client socket can take a node's port before the node listens.
/// `TransportTCPTests` hands out 20000–31999 in the same test process; these are
/// 10000–19999.
private let nextLoopbackPort = Atomic<Int>(Int.random(in: 0..<10_000))

/// A TCP port on 127.0.0.1 that nobody listens on now, from 10000–19999 and handed out
/// once per test run (see `nextLoopbackPort`).
func unusedLoopbackPort() throws -> Int {
    for _ in 0..<10_000 {
        let port = 10_000 + nextLoopbackPort.add(1, ordering: .relaxed).newValue % 10_000
        if try canBindLoopback(port) { return port }
    }
    throw MeshError(.invalidArgument, "no free TCP port on 127.0.0.1 in 10000-19999")
}

private func canBindLoopback(_ port: Int) throws -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw systemError("socket") }
    defer { Glibc.close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let length = socklen_t(MemoryLayout<sockaddr_in>.size)
    return withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 }
    }
}

// MARK: - Process helpers

/// Starts a long-running `scmesh` (its log goes nowhere).
func startScmesh(_ arguments: [String], home: String) throws -> Process {
    let process = Process()
    process.executableURL = scmeshExecutable
    process.arguments = arguments
    process.environment = scmeshEnvironment(home: home)
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// Kills `process` if it still runs and reaps it.
func stopProcess(_ process: Process) {
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
}

/// Runs `scmesh` to completion.
func runScmesh(_ arguments: [String], home: String) async throws -> ScmeshResult {
    try await runScmesh(arguments, environment: scmeshEnvironment(home: home))
}

func jsonObject(_ text: String) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
        throw MeshError(.invalidArgument, "not a JSON object: \(text)")
    }
    return object
}

func inbox(dataDirectory: String, home: String) async throws -> [[String: Any]] {
    let reply = try await runScmesh(["inbox", "--data-dir", dataDirectory, "--json"], home: home)
    guard reply.status == 0 else { throw MeshError(.invalidArgument, "inbox failed: \(reply.standardError)") }
    return try jsonObject(reply.standardOutput)["messages"] as? [[String: Any]] ?? []
}

func inboxTexts(dataDirectory: String, home: String) async throws -> [String] {
    try await inbox(dataDirectory: dataDirectory, home: home).compactMap { $0["text"] as? String }
}

/// `scmesh run` arguments for process tests that link nodes over TCP on 127.0.0.1 only:
/// the loopback, mDNS and BLE transports off, and quick reconnects.
let tcpOnlyNodeArguments = [
    "--set", "transports.loopback.enabled=false", "--set", "transports.mdns.enabled=false",
    "--set", "transports.ble.enabled=false",
    "--set", "reconnect.initial_delay_ms=50", "--set", "reconnect.max_delay_ms=400",
]
