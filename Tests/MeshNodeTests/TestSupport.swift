import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

/// A node running in this process on a temporary data directory.
struct RunningNode {
    let node: Node
    let directory: TemporaryDirectory
    let task: Task<Void, any Error>
    var client: ControlClient { ControlClient(dataDirectory: directory.path) }

    /// Builds and starts a node from `yaml`, and waits until its control socket answers.
    static func start(
        yaml: String,
        overrides: [String] = [],
        registry: TransportRegistry = .builtIn,
        directory: TemporaryDirectory? = nil
    ) async throws -> RunningNode {
        let directory = try directory ?? TemporaryDirectory()
        let config = try NodeConfiguration.load(
            yaml: yaml,
            source: "test",
            environment: [:],
            overrides: overrides,
            registry: registry
        )
        let node = try buildNode(config: config, dataDirectory: directory.path, registry: registry)
        let task = Task { try await node.run(handlingSignals: false) }
        let running = RunningNode(node: node, directory: directory, task: task)
        try await eventually("the control socket answers") {
            try await running.client.call(.status).ok
        }
        return running
    }

    /// Stops the node (cancellation) and waits for it.
    func stop() async throws {
        task.cancel()
        try await task.value
    }
}

// MARK: - scmesh processes

/// The `scmesh` executable next to this test binary (`swift build --build-tests` builds it).
let scmeshExecutable: URL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    .deletingLastPathComponent().appendingPathComponent("scmesh")

/// What one finished `scmesh` invocation printed.
struct ScmeshResult {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// The test's environment without `SCMESH_*` variables, `HOME` = `home`.
func scmeshEnvironment(home: String) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SCMESH_") }
    environment["HOME"] = home
    environment["XDG_DATA_HOME"] = nil
    return environment
}

/// Runs `scmesh` to completion with `environment`, `input` (if any) on its standard input.
///
/// The wait happens on a thread of its own: a test blocking one of the few threads of
/// Swift's cooperative pool for the length of a process run would starve every other
/// test running in parallel (and trip their hang guards).
func runScmesh(_ arguments: [String], environment: [String: String], input: [UInt8]? = nil) async throws -> ScmeshResult
{
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<ScmeshResult, any Error>) in
        let thread = Thread {
            continuation.resume(
                with: Result { try runScmeshBlocking(arguments, environment: environment, input: input) }
            )
        }
        thread.start()
    }
}

private func runScmeshBlocking(
    _ arguments: [String],
    environment: [String: String],
    input: [UInt8]?
) throws -> ScmeshResult {
    let result = try ChildProcess.run(
        executable: scmeshExecutable.path,
        arguments: arguments,
        environment: environment,
        input: input
    )
    return ScmeshResult(
        status: result.status,
        standardOutput: String(decoding: result.output, as: UTF8.self),
        standardError: String(decoding: result.error, as: UTF8.self)
    )
}

/// A valid Ed25519 public key that no node of these tests has (RFC 8032, test 1): a
/// destination `send` accepts and queues, waiting for a route that never comes.
let strangerPeerHex = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
