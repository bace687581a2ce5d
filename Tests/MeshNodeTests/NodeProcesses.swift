import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

/// Real `scmesh run` processes for one test, in a temporary directory that is also
/// their HOME: each starts TCP-only on 127.0.0.1 (``tcpOnlyNodeArguments``) and is
/// waited for until its control socket answers. ``stop()`` kills them and removes the
/// directory.
///
/// ```swift
/// let nodes = try NodeProcesses()
/// defer { nodes.stop() }
/// let a = try await nodes.start("a", ["--set", "transports.tcp.listen=127.0.0.1:\(port)"])
/// ```
final class NodeProcesses {
    /// One started node.
    struct Node {
        /// Its data directory.
        let dataDirectory: String
        /// Its control socket.
        let client: ControlClient
        /// Its peer ID.
        let peerID: PeerID
    }

    let directory: TemporaryDirectory
    private var processes: [Process] = []

    /// The HOME every `scmesh` of the test gets.
    var home: String { directory.path }

    /// - Throws: when `scmesh` is not built, or the directory cannot be made.
    init() throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        directory = try TemporaryDirectory()
    }

    /// Starts `scmesh run` on the data directory `name` with `arguments` after the
    /// TCP-only ones, and waits (bounded) until it answers.
    func start(_ name: String, _ arguments: [String] = []) async throws -> Node {
        let data = directory.file(name)
        processes.append(try startScmesh(["run", "--data-dir", data] + tcpOnlyNodeArguments + arguments, home: home))
        let client = ControlClient(dataDirectory: data)
        try await eventually("node \(name) answers", attempts: 1500) { try await client.call(.status).ok }
        return Node(
            dataDirectory: data,
            client: client,
            peerID: try await client.call(.status).decode(StatusReply.self).peerID
        )
    }

    /// Runs `scmesh` to completion with this test's HOME.
    func run(_ arguments: [String]) async throws -> ScmeshResult {
        try await runScmesh(arguments, home: home)
    }

    /// Kills every node and removes the directory.
    func stop() {
        processes.forEach(stopProcess)
        directory.cleanUp()
    }
}
