import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Issue 44, run-time control that persists: `scmesh dial`, `scmesh transports`,
// `scmesh settings` kept across restarts (and `--reset`), `scmesh peers --known`, network
// quality. Real `scmesh` processes over TCP on 127.0.0.1; every wait is a bounded poll.

@Suite("scmesh run-time control: dial, transports, settings kept across restarts")
struct RunTimeControlProcessTests {
    @Test("a three-node line where the first node joins by scmesh dial; the ledger lists the address")
    func lineJoinedByDial() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let (portB, portC) = (try freeLoopbackPort(), try freeLoopbackPort())
        let nodeB = try await startNode(nodes, "b", port: portB)
        let nodeC = try await startNode(
            nodes,
            "c",
            port: portC,
            extra: ["--set", "transports.tcp.bootstrap=127.0.0.1:\(portB)"]
        )
        let nodeA = try await startNode(nodes, "a", port: 0)
        let (a, c) = (nodeA.dataDirectory, nodeC.dataDirectory)
        let (idB, idC) = (nodeB.peerID, nodeC.peerID)
        #expect(try await status(a)["network_quality"] as? String == "offline")

        // Refusals are one line naming what is wrong.
        let unknown = try await runScmesh(["dial", "--data-dir", a, "carrier-pigeon", "127.0.0.1:1"], home: home)
        #expect(unknown.status != 0)
        #expect(unknown.standardError.contains("no transport named \"carrier-pigeon\""), "\(unknown.standardError)")
        #expect(unknown.standardError.contains("tcp"), "\(unknown.standardError)")
        #expect(unknown.standardError.trimmingCharacters(in: .newlines).split(separator: "\n").count == 1)
        let nobody = try freeLoopbackPort()
        let refused = try await runScmesh(["dial", "--data-dir", a, "tcp", "127.0.0.1:\(nobody)"], home: home)
        #expect(refused.status != 0)
        #expect(refused.standardError.contains("cannot reach 127.0.0.1:\(nobody) over tcp"), "\(refused.standardError)")

        let dial = try await runScmesh(
            ["dial", "--data-dir", a, "--json", "--timeout", "60", "tcp", "127.0.0.1:\(portB)"],
            home: home
        )
        #expect(dial.status == 0, "\(dial.standardOutput) \(dial.standardError)")
        let dialed = try jsonObject(dial.standardOutput)
        #expect(dialed["peer"] as? String == idB.hex, "\(dial.standardOutput)")
        #expect(dialed["address"] as? String == "127.0.0.1:\(portB)")

        // Through B to C: the message is delivered.
        let sent = try await runScmesh(
            ["send", "--data-dir", a, "--timeout", "60", idC.hex, "hello over the line"],
            home: home
        )
        #expect(sent.status == 0, "\(sent.standardError)")
        try await eventually("C has A's message", attempts: 3000) {
            try await inboxTexts(dataDirectory: c, home: home).contains("hello over the line")
        }

        // The address A dialled is in its ledger, with B, its success and the transport.
        try await eventually("A's ledger lists B's address", attempts: 3000) {
            let known = try await runScmesh(["peers", "--known", "--json", "--data-dir", a], home: home)
            let entries = try jsonObject(known.standardOutput)["known"] as? [[String: Any]] ?? []
            return entries.contains {
                $0["peer"] as? String == idB.hex && $0["address"] as? String == "127.0.0.1:\(portB)"
                    && $0["transport"] as? String == "tcp" && ($0["successes"] as? Int ?? 0) >= 1
                    && $0["last_seen_at"] is String
            }
        }
        let text = try await runScmesh(["peers", "--known", "--data-dir", a], home: home)
        #expect(text.standardOutput.contains("127.0.0.1:\(portB)"), "\(text.standardOutput)")
        #expect(try await status(a)["network_quality"] as? String != "offline")
    }

    @Test("settings and a disabled transport hold across a restart; settings --reset goes back to the config")
    func settingsAndTransportsPersist() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let port = try freeLoopbackPort()
        // A second transport (the in-process loopback one) keeps the node something to run.
        let node = try await startNode(nodes, "a", port: port, extra: ["--set", "transports.loopback.enabled=true"])
        let data = node.dataDirectory

        let changed = try await runScmesh(
            ["settings", "--data-dir", data, "--relay-max-per-hour", "77", "--relay-neighbour-share", "0.5"],
            home: home
        )
        #expect(changed.status == 0, "\(changed.standardError)")
        #expect(changed.standardOutput.contains("run-time"), "\(changed.standardOutput)")
        #expect(changed.standardOutput.contains("--reset"), "\(changed.standardOutput)")
        let unknown = try await runScmesh(["transports", "disable", "--data-dir", data, "nosuch"], home: home)
        #expect(unknown.status != 0)
        #expect(unknown.standardError.contains("no transport named \"nosuch\""), "\(unknown.standardError)")
        #expect(unknown.standardError.contains("tcp") && unknown.standardError.contains("loopback"))
        let disabled = try await runScmesh(["transports", "disable", "--data-dir", data, "--json", "tcp"], home: home)
        #expect(disabled.status == 0, "\(disabled.standardError)")
        #expect(try state(of: "tcp", in: disabled.standardOutput) == "disabled", "\(disabled.standardOutput)")
        #expect(!canConnect(port), "a disabled transport still listens")

        // Restart: both changes hold.
        #expect(try await nodes.terminate(node) == 0)
        try await nodes.restart(node)
        let settings = try jsonObject(
            try await runScmesh(["settings", "--json", "--data-dir", data], home: home).standardOutput
        )
        #expect(settings["relay_max_per_hour"] as? Int == 77, "\(settings)")
        #expect(settings["relay_neighbour_share"] as? Double == 0.5, "\(settings)")
        #expect(Set(settings["runtime"] as? [String] ?? []) == ["relay_max_per_hour", "relay_neighbour_share"])
        let configured = settings["config"] as? [String: Any]
        #expect(configured?["relay_max_per_hour"] as? Int != 77, "\(settings)")
        let listed = try await runScmesh(["transports", "--json", "--data-dir", data], home: home)
        #expect(try state(of: "tcp", in: listed.standardOutput) == "disabled", "\(listed.standardOutput)")
        #expect(try jsonObject(listed.standardOutput)["disabled"] as? [String] == ["tcp"])
        #expect(!canConnect(port))

        // Enabled again: it listens on its port.
        let enabled = try await runScmesh(["transports", "enable", "--data-dir", data, "tcp"], home: home)
        #expect(enabled.status == 0, "\(enabled.standardError)")
        try await eventually("tcp runs again", attempts: 3000) {
            let listed = try await runScmesh(["transports", "--json", "--data-dir", data], home: home)
            return try state(of: "tcp", in: listed.standardOutput) == "running"
        }
        #expect(canConnect(port))

        // Reset: the config's values, now and after a restart.
        let reset = try await runScmesh(["settings", "--reset", "--json", "--data-dir", data], home: home)
        #expect(reset.status == 0, "\(reset.standardError)")
        let afterReset = try jsonObject(reset.standardOutput)
        #expect(afterReset["runtime"] as? [String] == [], "\(afterReset)")
        #expect(afterReset["relay_max_per_hour"] as? Int == configured?["relay_max_per_hour"] as? Int)
        let mixed = try await runScmesh(["settings", "--reset", "--relay", "off", "--data-dir", data], home: home)
        #expect(mixed.status != 0)
        #expect(mixed.standardError.contains("--reset goes alone"), "\(mixed.standardError)")
        #expect(!FileManager.default.fileExists(atPath: SavedSettings.path(dataDirectory: data)))
    }

    @Test("network quality moves from offline to poor to good as peers come and go, in status and its JSON")
    func networkQualityFollowsPeers() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let port = try freeLoopbackPort()
        let hub = try await startNode(nodes, "hub", port: port).dataDirectory
        #expect(try await status(hub)["network_quality"] as? String == "offline")
        let text = try await runScmesh(["status", "--data-dir", hub], home: home)
        #expect(text.standardOutput.contains("0 peers · network offline"), "\(text.standardOutput)")

        var spokes: [NodeProcesses.Node] = []
        for (index, expected) in ["poor", "poor", "good"].enumerated() {
            spokes.append(
                try await startNode(
                    nodes,
                    "spoke\(index)",
                    port: 0,
                    extra: ["--set", "transports.tcp.bootstrap=127.0.0.1:\(port)"]
                )
            )
            try await eventually("\(index + 1) peers: \(expected)", attempts: 3000) {
                let status = try await status(hub)
                return status["peer_count"] as? Int == index + 1 && status["network_quality"] as? String == expected
            }
        }
        // Peers go: good → poor → offline.
        for (remaining, expected) in [(2, "poor"), (1, "poor"), (0, "offline")] {
            nodes.kill9(spokes.removeLast())
            try await eventually("\(remaining) peers: \(expected)", attempts: 3000) {
                let status = try await status(hub)
                return status["peer_count"] as? Int == remaining && status["network_quality"] as? String == expected
            }
        }
    }

    @Test("contacts show last_seen; contacts rename and contacts note change a contact, refusals in one line")
    func contactsRenameNoteLastSeen() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let portB = try freeLoopbackPort()
        let nodeB = try await startNode(nodes, "b", port: portB)
        let nodeA = try await startNode(
            nodes,
            "a",
            port: 0,
            extra: ["--set", "transports.tcp.bootstrap=127.0.0.1:\(portB)"]
        )
        let (a, c, idB) = (nodeA.dataDirectory, nodes.directory.file("c"), nodeB.peerID)
        let idC = try await identity(c, home: home)
        for (alias, peer) in [("bob", idB), ("carol", idC)] {
            let added = try await runScmesh(["contacts", "add", "--data-dir", a, alias, peer.hex], home: home)
            #expect(added.status == 0, "\(added.standardError)")
        }
        try await eventually("bob is seen now", attempts: 3000) {
            let contacts = try await contactList(a, home: home)
            return contacts["bob"]?["last_seen_at"] is String
        }
        #expect(try await contactList(a, home: home)["carol"]?["last_seen_at"] == nil, "carol was never seen")

        let renamed = try await runScmesh(["contacts", "rename", "--data-dir", a, "bob", "robert"], home: home)
        #expect(renamed.status == 0, "\(renamed.standardError)")
        #expect(renamed.standardOutput.contains("renamed bob to robert"), "\(renamed.standardOutput)")
        let noted = try await runScmesh(
            ["contacts", "note", "--data-dir", a, "robert", "met at the meetup"],
            home: home
        )
        #expect(noted.status == 0, "\(noted.standardError)")
        let contacts = try await contactList(a, home: home)
        #expect(contacts["bob"] == nil)
        #expect(contacts["robert"]?["peer"] as? String == idB.hex)
        #expect(contacts["robert"]?["note"] as? String == "met at the meetup")
        #expect(contacts["robert"]?["last_seen_at"] is String)
        let listed = try await runScmesh(["contacts", "--data-dir", a], home: home)
        #expect(listed.standardOutput.contains("LAST SEEN"), "\(listed.standardOutput)")
        #expect(listed.standardOutput.contains("never"), "\(listed.standardOutput)")

        for (arguments, error) in [
            (["rename", "nobody", "x"], "nobody"),
            (["rename", "robert", "carol"], "alias \"carol\" is already taken"),
            (["note", "nobody", "x"], "nobody"),
        ] {
            let refused = try await runScmesh(["contacts"] + arguments + ["--data-dir", a], home: home)
            #expect(refused.status != 0, "\(arguments)")
            #expect(refused.standardError.contains(error), "\(arguments): \(refused.standardError)")
            #expect(refused.standardError.trimmingCharacters(in: .newlines).split(separator: "\n").count == 1)
        }
    }
}

// MARK: - Helpers

/// Starts the TCP-only node `name` listening on `port` (0: any), relay on.
private func startNode(
    _ nodes: NodeProcesses,
    _ name: String,
    port: Int,
    extra: [String] = []
) async throws -> NodeProcesses.Node {
    try await nodes.start(
        name,
        ["--set", "relay.enabled=true", "--set", "transports.tcp.listen=127.0.0.1:\(port)"] + extra
    )
}

private func status(_ data: String) async throws -> [String: Any] {
    let reply = try await ControlClient(dataDirectory: data).call(.status)
    return try jsonObject(reply.line)
}

private func identity(_ data: String, home: String) async throws -> PeerID {
    let result = try await runScmesh(["identity", "--create", "--data-dir", data, "--json"], home: home)
    let hex = try jsonObject(result.standardOutput)["peer"] as? String ?? ""
    return try #require(PeerID(hex: hex), "\(result.standardOutput) \(result.standardError)")
}

private func contactList(_ data: String, home: String) async throws -> [String: [String: Any]] {
    let reply = try await runScmesh(["contacts", "--json", "--data-dir", data], home: home)
    let entries = try jsonObject(reply.standardOutput)["contacts"] as? [[String: Any]] ?? []
    var byAlias: [String: [String: Any]] = [:]
    for entry in entries { if let alias = entry["alias"] as? String { byAlias[alias] = entry } }
    return byAlias
}

private func state(of transport: String, in reply: String) throws -> String? {
    let transports = try jsonObject(reply)["transports"] as? [[String: Any]] ?? []
    return transports.first { $0["name"] as? String == transport }?["state"] as? String
}

/// Whether something accepts a TCP connection on 127.0.0.1:`port`.
private func canConnect(_ port: Int) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    return result == 0
}
