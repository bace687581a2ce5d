import Foundation
import MeshCore
import MeshNode
import Testing

/// A fresh directory under /tmp (short, so a control socket path fits), removed by `cleanUp()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/scmesh-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw MeshError(.invalidArgument, "mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        path = String(cString: made)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: path)
    }

    func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
}

/// Polls `condition` every 20 ms until it holds or `attempts` run out.
func eventually(
    _ what: String, attempts: Int = 500, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async throws {
    for _ in 0..<attempts {
        if (try? await condition()) == true { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
    throw CancellationError()
}

/// A node running in this process on a temporary data directory.
struct RunningNode {
    let node: Node
    let directory: TemporaryDirectory
    let task: Task<Void, any Error>
    var client: ControlClient { ControlClient(dataDirectory: directory.path) }

    /// Builds and starts a node from `yaml`, and waits until its control socket answers.
    static func start(
        yaml: String, overrides: [String] = [], registry: TransportRegistry = .builtIn,
        directory: TemporaryDirectory? = nil
    ) async throws -> RunningNode {
        let directory = try directory ?? TemporaryDirectory()
        let config = try NodeConfiguration.load(
            yaml: yaml, source: "test", environment: [:], overrides: overrides, registry: registry)
        let node = try buildNode(config: config, dataDirectory: directory.path, registry: registry)
        let task = Task { try await node.run(handlingSignals: false) }
        let running = RunningNode(node: node, directory: directory, task: task)
        try await eventually("the control socket answers") {
            try await running.client.call(ControlRequest(cmd: "status")).ok
        }
        return running
    }

    /// Stops the node (cancellation) and waits for it.
    func stop() async throws {
        task.cancel()
        try await task.value
    }
}
