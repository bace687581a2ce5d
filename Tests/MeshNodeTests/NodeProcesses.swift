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
/// let (a, b) = try await nodes.startPair()
/// let reply = try await nodes.json(a, ["send", "--wait", b.peerID.hex, "hello"])
/// ```
final class NodeProcesses {
    /// One started node.
    struct Node {
        /// Its name in the test: the data directory's name, and the key to restart it.
        let name: String
        /// Its data directory.
        let dataDirectory: String
        /// Its control socket.
        let client: ControlClient
        /// Its peer ID.
        let peerID: PeerID
    }

    let directory: TemporaryDirectory
    private var processes: [String: ChildProcess] = [:]
    private var arguments: [String: [String]] = [:]

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
        let all = ["run", "--data-dir", data] + tcpOnlyNodeArguments + arguments
        if let old = processes[name] { stopProcess(old) }
        processes[name] = try startScmesh(all, home: home)
        self.arguments[name] = arguments
        let client = ControlClient(dataDirectory: data)
        try await eventually("node \(name) answers", attempts: 1500) { try await client.call(.status).ok }
        return Node(
            name: name,
            dataDirectory: data,
            client: client,
            peerID: try await client.call(.status).decode(StatusReply.self).peerID
        )
    }

    /// Starts node `name` on ports of its own (TCP and HTTP API on any free port of
    /// 127.0.0.1), with `arguments` after those.
    func startAlone(_ name: String, _ arguments: [String] = []) async throws -> Node {
        try await start(
            name,
            ["--set", "transports.tcp.listen=127.0.0.1:0", "--set", "http.listen=127.0.0.1:0"] + arguments
        )
    }

    /// Creates the identity of node `name` without starting it: a peer that is down.
    func createIdentity(_ name: String) async throws -> PeerID {
        let created = try await run(["identity", "--create", "--data-dir", directory.file(name)])
        #expect(created.status == 0, "\(created.standardError)")
        return try #require(PeerID(hex: created.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// Starts `first` listening on a free loopback port and `second` dialling it, each
    /// with `both` after the TCP-only arguments (and `second` with `secondArguments`).
    func startPair(
        _ first: String = "a",
        _ second: String = "b",
        both: [String] = [],
        secondArguments: [String] = []
    ) async throws -> (Node, Node) {
        let port = try freeLoopbackPort()
        let a = try await start(first, ["--set", "transports.tcp.listen=127.0.0.1:\(port)"] + both)
        let b = try await start(
            second,
            ["--set", "transports.tcp.listen=127.0.0.1:0", "--set", "transports.tcp.bootstrap=127.0.0.1:\(port)"]
                + both + secondArguments
        )
        return (a, b)
    }

    /// Starts `node` again with the arguments it was started with, after it was
    /// killed or stopped, and waits until it answers.
    @discardableResult
    func restart(_ node: Node) async throws -> Node {
        try await start(node.name, arguments[node.name] ?? [])
    }

    /// Kills `node` with SIGKILL and reaps it.
    func kill9(_ node: Node) {
        guard let process = processes[node.name] else { return }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal, "node \(node.name) was killed by SIGKILL")
    }

    /// Sends SIGTERM to `node` and waits (bounded) for it to exit.
    /// - Returns: its exit status.
    func terminate(_ node: Node) async throws -> Int32 {
        let process = try #require(processes[node.name], "node \(node.name) was started")
        kill(process.processIdentifier, SIGTERM)
        try await eventually("node \(node.name) exits after SIGTERM", attempts: 1500) { !process.isRunning }
        return process.terminationStatus
    }

    /// Runs `scmesh` to completion with this test's HOME.
    func run(_ arguments: [String]) async throws -> ScmeshResult {
        try await runScmesh(arguments, home: home)
    }

    /// Runs `scmesh ARGUMENTS --data-dir D --json` on `node`, expects it to succeed, and
    /// returns the reply.
    func json(_ node: Node, _ arguments: [String]) async throws -> [String: Any] {
        let result = try await run(arguments + ["--data-dir", node.dataDirectory, "--json"])
        #expect(result.status == 0, "\(arguments): \(result.standardError) \(result.standardOutput)")
        return try jsonObject(result.standardOutput)
    }

    /// Kills every node and removes the directory.
    func stop() {
        processes.values.forEach(stopProcess)
        directory.cleanUp()
    }
}
