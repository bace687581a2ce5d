import Foundation
import MeshCore
import MeshNode
import MeshStore
import PipeNode
import Testing

/// The factory registered in a node's registry: two nodes, one dialling the other's
/// socket, exchange a message over the pipe transport.
@Suite(.timeLimit(.minutes(2)))
struct PipeNodeTests {
    @Test func twoNodesExchangeAMessageOverPipes() async throws {
        var template = Array("/tmp/scmesh-pipe-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let registry = TransportRegistry(TransportRegistry.builtIn.all + [.pipe()])
        func node(_ name: String, peers: [String]) throws -> Node {
            let yaml = """
                relay: {enabled: true}
                transports:
                  pipe: {enabled: true, listen: "\(directory)/\(name).sock", peers: [\(peers.map { "\"\($0)\"" }.joined(separator: ", "))]}
                """
            let config = try NodeConfiguration.load(yaml: yaml, source: name, environment: [:], registry: registry)
            #expect(config.enabledTransports.map(\.name) == ["pipe"])
            return try buildNode(config: config, dataDirectory: "\(directory)/\(name)", registry: registry)
        }
        let alice = try node("a", peers: [])
        let bob = try node("b", peers: ["\(directory)/a.sock"])
        let running = [alice, bob].map { node in Task { try await node.run(handlingSignals: false) } }
        defer { running.forEach { $0.cancel() } }

        try await eventually("bob has a link to alice") {
            await bob.router.peers().contains { $0.peer == alice.peerID }
        }
        let payload = Array("hello over a Unix socket".utf8)
        _ = try await bob.router.send(to: alice.peerID, payload: payload, waitUntil: .delivered)
        try await eventually("alice received the message") {
            ((try? await alice.inbox.entries()) ?? []).contains { $0.message.payload == payload && $0.message.transport == "pipe" }
        }
        for task in running { task.cancel() }
        for task in running { try await task.value }
    }

    private func eventually(_ what: String, _ condition: () async -> Bool) async throws {
        for _ in 0..<500 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out waiting until \(what)")
        throw CancellationError()
    }
}
