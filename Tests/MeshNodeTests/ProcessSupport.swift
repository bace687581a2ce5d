import Foundation
import MeshCore
import MeshNode
import TestSupport

// Helpers for tests that run `scmesh` processes over TCP on loopback.

// MARK: - Process helpers

/// Starts a long-running `scmesh` (its log goes nowhere).
func startScmesh(_ arguments: [String], home: String) throws -> ChildProcess {
    try ChildProcess(
        executable: scmeshExecutable.path,
        arguments: arguments,
        environment: scmeshEnvironment(home: home)
    )
}

/// Starts a long-running `scmesh` client (`inbox --follow`, `events --follow`) whose
/// standard output goes to the file `output`.
func startFollower(_ arguments: [String], output: String, home: String) throws -> ChildProcess {
    let file = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard file >= 0 else { throw ChildProcessError(call: "open \(output)", errno: errno) }
    defer { close(file) }
    return try ChildProcess(
        executable: scmeshExecutable.path,
        arguments: arguments,
        environment: scmeshEnvironment(home: home),
        standardOutput: .descriptor(file)
    )
}

/// Kills `process` if it still runs and reaps it.
func stopProcess(_ process: ChildProcess) {
    process.kill()
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
    let input = open(path, O_RDONLY | O_CLOEXEC)
    guard input >= 0 else { throw ChildProcessError(call: "open \(path)", errno: errno) }
    defer { close(input) }
    let directory = try TemporaryDirectory()
    let outputPath = directory.file("stdout")
    let errorPath = directory.file("stderr")
    let output = open(outputPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    let errors = open(errorPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    defer {
        if output >= 0 { close(output) }
        if errors >= 0 { close(errors) }
    }
    guard output >= 0, errors >= 0 else { throw ChildProcessError(call: "open \(directory.path)", errno: errno) }
    let process = try ChildProcess(
        executable: scmeshExecutable.path,
        arguments: arguments,
        environment: scmeshEnvironment(home: home),
        standardInput: .descriptor(input),
        standardOutput: .descriptor(output),
        standardError: .descriptor(errors)
    )
    do {
        try await waitUntil("scmesh \(arguments.first ?? "") exits") { !process.isRunning }
    } catch {
        process.kill()
        throw error
    }
    return ScmeshResult(
        status: process.terminationStatus,
        standardOutput: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "",
        standardError: (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    )
}
