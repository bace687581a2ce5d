import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing

// The address ledger as the node keeps and uses it, over real TCP on loopback.

@Suite("Address ledger")
struct LedgerNodeTests {
    static func tcpYAML(listen port: Int, bootstrap: Int? = nil) -> String {
        """
        relay: {enabled: true}
        reconnect: {initial_delay_ms: 50, max_delay_ms: 400}
        transports:
          tcp: {enabled: true, listen: ["127.0.0.1:\(port)"], bootstrap: [\(bootstrap.map { "\"127.0.0.1:\($0)\"" } ?? "")]}
        """
    }

    @Test(
        "a node records the address that worked, redials it after a restart without bootstrap config, and counts failed dials against it"
    )
    func redialAfterRestart() async throws {
        let portAlice = try freeLoopbackPort()
        let portBob = try freeLoopbackPort()
        var bob = try await RunningNode.start(yaml: Self.tcpYAML(listen: portBob))
        let bobDirectory = bob.directory
        var alice = try await RunningNode.start(yaml: Self.tcpYAML(listen: portAlice, bootstrap: portBob))
        let aliceDirectory = alice.directory
        defer {
            aliceDirectory.cleanUp()
            bobDirectory.cleanUp()
        }
        let bobID = bob.node.peerID
        try await eventually("alice has a link to bob", attempts: 1_500) {
            await alice.node.router.peers().contains { $0.peer == bobID }
        }
        let address = "127.0.0.1:\(portBob)"
        try await eventually("the ledger records bob's address as working", attempts: 1_500) {
            try await alice.node.store.ledger.addresses(for: bobID).first.map {
                $0.address == address && $0.successes >= 1
            } == true
        }
        // Bob never dialled alice: an inbound link's ephemeral port is not recorded.
        #expect(try await bob.node.store.ledger.addresses(for: alice.node.peerID).isEmpty)

        // Restart alice with no bootstrap at all: the ledger brings the link back.
        try await alice.stop()
        alice = try await RunningNode.start(yaml: Self.tcpYAML(listen: portAlice), directory: aliceDirectory)
        try await eventually("the restarted alice redials bob from the ledger", attempts: 1_500) {
            await alice.node.router.peers().contains { $0.peer == bobID }
        }
        let sent = try await alice.client.call(
            NodeCommand.send(SendRequest(peer: bobID.hex, text: "found you again", wait: true))
        ).decode(SendReply.self)
        #expect(sent.status == .delivered)

        // Bob goes away: alice's redials fail, and the ledger counts the failures.
        try await bob.stop()
        try await eventually("failed dials are counted against bob's address", attempts: 1_500) {
            try await alice.node.store.ledger.addresses(for: bobID).first.map { $0.failures >= 1 } == true
        }
        // ...and a message for him waits; when he is back it is delivered.
        let waiting = try await alice.client.call(.send(SendRequest(peer: bobID.hex, text: "while you were away")))
            .decode(SendReply.self)
        #expect(waiting.status == .queued)
        bob = try await RunningNode.start(yaml: Self.tcpYAML(listen: portBob), directory: bobDirectory)
        try await eventually("the queued message reaches bob", attempts: 6_000) {
            try await bob.client.call(.inbox(InboxRequest())).decode(InboxReply.self).messages.compactMap(\.text)
                == ["found you again", "while you were away"]
        }
        try await alice.stop()
        try await bob.stop()
    }
}
