import Foundation
import MeshCore
import MeshNode
import TestSupport

// Helpers for tests that run `scmesh` processes over TCP on loopback.

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

/// Starts a long-running `scmesh` client (`inbox --follow`, `events --follow`) whose
/// standard output goes to the file `output`.
func startFollower(_ arguments: [String], output: String, home: String) throws -> Process {
    _ = FileManager.default.createFile(atPath: output, contents: nil)
    let process = Process()
    process.executableURL = scmeshExecutable
    process.arguments = arguments
    process.environment = scmeshEnvironment(home: home)
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
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

/// Runs `scmesh` with the file at `path` on its standard input (`/dev/zero`: input
/// that never ends) and returns once it exits; a run that does not stop within the
/// hang guard is killed and fails the test.
func runScmesh(_ arguments: [String], home: String, standardInput path: String) async throws -> ScmeshResult {
    let process = Process()
    process.executableURL = scmeshExecutable
    process.arguments = arguments
    process.environment = scmeshEnvironment(home: home)
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle(forReadingAtPath: path)
    try process.run()
    do {
        try await waitUntil("scmesh \(arguments.first ?? "") exits") { !process.isRunning }
    } catch {
        process.terminate()
        process.waitUntilExit()
        throw error
    }
    // The outputs are a line or two: they fit in the pipes' buffers.
    return ScmeshResult(
        status: process.terminationStatus,
        standardOutput: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
        standardError: String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    )
}
