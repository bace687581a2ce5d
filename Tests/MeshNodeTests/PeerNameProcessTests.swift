import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing

// Issue 43, one naming of peers: a stranger's `node.name` travels in the link
// handshake (docs/PROTOCOL.md §B.2.1) and listings print it as a claim,
// `~name (8 hex…)`; a contact's alias wins. Real nodes over TCP on 127.0.0.1; every
// wait bounded.

@Suite("Peer names heard in the handshake")
struct PeerNameProcessTests {
    @Test(
        "two scmesh processes over TCP: B's peers, inbox and history print A's node.name as ~name (8 hex…), JSON has it as name; A's alias at B wins; a node without a name stays bare hex"
    )
    func strangerNamePrinted() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let portB = try freeLoopbackPort()
        let common = ["--set", "http.enabled=false"]
        let b = try await nodes.start("b", ["--set", "transports.tcp.listen=127.0.0.1:\(portB)"] + common)
        let a = try await nodes.start(
            "a",
            ["--set", "transports.tcp.listen=127.0.0.1:0", "--set", "node.name=Alice laptop"] + common
        )
        let (dataA, dataB) = (a.dataDirectory, b.dataDirectory)
        let dial = try await nodes.run(["dial", "--data-dir", dataA, "tcp", "127.0.0.1:\(portB)"])
        #expect(dial.status == 0, "\(dial.standardError)")
        let claimed = "~Alice laptop (\(a.peerID.short)…)"

        try await eventually("B lists A by its claimed name", attempts: 1500) {
            try await nodes.run(["peers", "--data-dir", dataB]).standardOutput.contains(claimed)
        }
        let peersJSON = try jsonObject(try await nodes.run(["peers", "--data-dir", dataB, "--json"]).standardOutput)
        #expect((peersJSON["names"] as? [String: String])?[a.peerID.hex] == "Alice laptop", "\(peersJSON)")
        #expect(peersJSON["aliases"] == nil, "\(peersJSON)")
        let full = try await nodes.run(["peers", "--data-dir", dataB, "--full"])
        #expect(full.standardOutput.contains("~Alice laptop (\(a.peerID.hex))"), "\(full.standardOutput)")
        // B claims no name: A lists it by the start of its ID alone.
        let atA = try await nodes.run(["peers", "--data-dir", dataA])
        #expect(atA.standardOutput.contains("\(b.peerID.short)…"), "\(atA.standardOutput)")
        #expect(!atA.standardOutput.contains("~"), "\(atA.standardOutput)")
        let routes = try await nodes.run(["routes", "--data-dir", dataB])
        #expect(routes.standardOutput.contains(claimed), "\(routes.standardOutput)")

        let sent = try await nodes.run(["send", "--data-dir", dataA, "--timeout", "30", b.peerID.hex, "hello"])
        #expect(sent.status == 0, "\(sent.standardError)")
        let inboxText = try await nodes.run(["inbox", "--data-dir", dataB])
        #expect(inboxText.standardOutput.contains("from \(claimed)  via tcp"), "\(inboxText.standardOutput)")
        let received = try await inbox(dataDirectory: dataB, home: nodes.home)
        #expect(received.first?["name"] as? String == "Alice laptop", "\(received)")
        #expect(received.first?["peer"] as? String == a.peerID.hex, "\(received)")
        let history = try await nodes.run(["history", "--data-dir", dataB])
        #expect(history.standardOutput.contains(claimed), "\(history.standardOutput)")
        let events = try await nodes.run(["events", "--data-dir", dataB])
        #expect(events.standardOutput.contains("peer=\(claimed)"), "\(events.standardOutput)")
        let historyJSON = try jsonObject(
            try await nodes.run(["history", "--data-dir", dataB, "--json"]).standardOutput
        )
        let entries = try #require(historyJSON["messages"] as? [[String: Any]])
        #expect(entries.first?["name"] as? String == "Alice laptop", "\(entries)")

        // A contact's alias wins over the claimed name.
        let added = try await nodes.run(["contacts", "add", "--data-dir", dataB, "ally", a.peerID.hex])
        #expect(added.status == 0, "\(added.standardError)")
        let afterAlias = try await nodes.run(["peers", "--data-dir", dataB])
        #expect(afterAlias.standardOutput.contains("ally (\(a.peerID.short)…)"), "\(afterAlias.standardOutput)")
        #expect(!afterAlias.standardOutput.contains("~Alice"), "\(afterAlias.standardOutput)")
        let inboxAfter = try await nodes.run(["inbox", "--data-dir", dataB])
        #expect(inboxAfter.standardOutput.contains("from ally (\(a.peerID.short)…)"), "\(inboxAfter.standardOutput)")
    }

    /// A TCP node on `port`; with `paranoid`, also an mDNS transport in that mode (on
    /// an interface that does not exist, so it neither publishes nor finds anyone).
    static func yaml(port: Int, name: String, paranoid: Bool) -> String {
        var text = """
            node: {name: "\(name)"}
            relay: {enabled: true}
            reconnect: {initial_delay_ms: 50, max_delay_ms: 400}
            transports:
              tcp: {enabled: true, listen: ["127.0.0.1:\(port)"]}
              loopback: {enabled: false}
              ble: {enabled: false}

            """
        text +=
            paranoid
            ? "  mdns: {enabled: true, discovery_mode: paranoid, interfaces: [scmesh-none0], listen: [\"127.0.0.1:0\"]}\n"
            : "  mdns: {enabled: false}\n"
        return text
    }

    @Test(
        "a node in paranoid discovery mode withholds its name from the handshake; switched to normal, its next link carries it"
    )
    func paranoidWithholdsName() async throws {
        let portA = try freeLoopbackPort()
        let portB = try freeLoopbackPort()
        let a = try await RunningNode.start(yaml: Self.yaml(port: portA, name: "quiet", paranoid: true))
        defer { a.directory.cleanUp() }
        let b = try await RunningNode.start(yaml: Self.yaml(port: portB, name: "loud", paranoid: false))
        defer { b.directory.cleanUp() }
        #expect(a.node.router.announcedName == nil)
        #expect(b.node.router.announcedName == "loud")

        let dialled = try await a.client.call(.dial(DialRequest(transport: "tcp", address: "127.0.0.1:\(portB)")))
        #expect(dialled.ok, "\(dialled.error ?? "")")
        try await eventually("B has a link to A", attempts: 1500) {
            try await b.client.call(.peers).decode(PeersReply.self).peers.contains { $0.peer == a.node.peerID }
        }
        // A heard B's name; B heard none from A.
        #expect(a.node.router.heardName(of: b.node.peerID) == "loud")
        #expect(b.node.router.heardName(of: a.node.peerID) == nil)
        let peers = try await b.client.call(.peers).decode(PeersReply.self)
        #expect(peers.names == nil)

        // Normal mode: the name goes out again, on the next handshake.
        let normal = try await a.client.call(.settings(SettingsRequest(discoveryMode: "normal")))
        #expect(normal.ok, "\(normal.error ?? "")")
        #expect(a.node.router.announcedName == "quiet")
        let again = try await b.client.call(.dial(DialRequest(transport: "tcp", address: "127.0.0.1:\(portA)")))
        #expect(again.ok, "\(again.error ?? "")")
        try await eventually("B hears A's name after a new handshake", attempts: 1500) {
            b.node.router.heardName(of: a.node.peerID) == "quiet"
        }
        // Back to paranoid: withheld again.
        let paranoid = try await a.client.call(.settings(SettingsRequest(discoveryMode: "paranoid")))
        #expect(paranoid.ok, "\(paranoid.error ?? "")")
        #expect(a.node.router.announcedName == nil)
        try await a.stop()
        try await b.stop()
    }

    @Test("a restarted node still names a stranger by the name it claimed before, from the store, until it links again")
    func nameSurvivesRestart() async throws {
        let portA = try freeLoopbackPort()
        let portB = try freeLoopbackPort()
        let a = try await RunningNode.start(yaml: Self.yaml(port: portA, name: "alpha", paranoid: false))
        defer { a.directory.cleanUp() }
        var b = try await RunningNode.start(yaml: Self.yaml(port: portB, name: "beta", paranoid: false))
        let directoryB = b.directory
        defer { directoryB.cleanUp() }
        let dialled = try await a.client.call(.dial(DialRequest(transport: "tcp", address: "127.0.0.1:\(portB)")))
        #expect(dialled.ok, "\(dialled.error ?? "")")
        let store = b.node.store
        try await eventually("B's store keeps A's name", attempts: 1500) {
            try await store.ledger.names()[a.node.peerID] == "alpha"
        }
        try await a.stop()
        try await b.stop()

        b = try await RunningNode.start(
            yaml: Self.yaml(port: portB, name: "beta", paranoid: false),
            directory: directoryB
        )
        let restarted = b
        try await eventually("the restarted B names A from its store", attempts: 1500) {
            restarted.node.router.heardName(of: a.node.peerID) == "alpha"
        }
        #expect(try await restarted.client.call(.peers).decode(PeersReply.self).peers.isEmpty)
        try await restarted.stop()
    }
}
