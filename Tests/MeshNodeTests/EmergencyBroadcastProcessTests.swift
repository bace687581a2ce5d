import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// `scmesh send --emergency --broadcast` between three real `scmesh run` processes in a
// line over TCP on 127.0.0.1 (A – B – C): the broadcast reaches C, two hops away,
// marked emergency and broadcast, and lists first in C's inbox. Every wait is a
// bounded poll.

@Suite("emergency broadcast across three node processes")
struct EmergencyBroadcastProcessTests {
    @Test("an emergency broadcast from A reaches C two hops away, marked, listed first; misuse is refused")
    func broadcastTwoHops() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let (portA, portB) = (try freeLoopbackPort(), try freeLoopbackPort())
        let nodeA = try await nodes.start("a", ["--set", "transports.tcp.listen=127.0.0.1:\(portA)"])
        let nodeB = try await nodes.start(
            "b",
            [
                "--set", "transports.tcp.listen=127.0.0.1:\(portB)", "--set",
                "transports.tcp.bootstrap=127.0.0.1:\(portA)",
            ]
        )
        let nodeC = try await nodes.start(
            "c",
            ["--set", "transports.tcp.listen=127.0.0.1:0", "--set", "transports.tcp.bootstrap=127.0.0.1:\(portB)"]
        )
        let (a, c) = (nodeA.dataDirectory, nodeC.dataDirectory)
        let clients = [nodeA.client, nodeB.client, nodeC.client]
        // B has both neighbours in its emergency-topic mesh: a broadcast from A gets through.
        try await eventually("B's emergency mesh holds A and C", attempts: 3000) {
            let topics = try await clients[1].call(.topics).decode(TopicsReply.self).topics
            return topics.first { $0.topic == TopicName.emergency }?.mesh.count == 2
        }
        let ordinary = try await runScmesh(
            [
                "send", "--data-dir", a, "--json",
                nodeC.peerID.hex, "just saying hi", "--wait",
            ],
            home: home
        )
        #expect(ordinary.status == 0, "\(ordinary.standardError)")
        let sent = try await runScmesh(
            ["send", "--data-dir", a, "--emergency", "--broadcast", "the river is rising", "--json"],
            home: home
        )
        #expect(sent.status == 0, "\(sent.standardError)")
        let id = try #require(try jsonObject(sent.standardOutput)["message_id"] as? String)
        let text = try await runScmesh(
            ["send", "--data-dir", a, "--emergency", "--broadcast", "go uphill"],
            home: home
        )
        #expect(
            text.standardOutput.contains("emergency broadcast to every node within reach"),
            "\(text.standardOutput)"
        )

        try await eventually("C has the broadcast", attempts: 3000) {
            try await inbox(dataDirectory: c, home: home).contains { $0["message_id"] as? String == id }
        }
        let message = try #require(
            try await inbox(dataDirectory: c, home: home).first { $0["message_id"] as? String == id }
        )
        #expect(message["emergency"] as? Bool == true && message["broadcast"] as? Bool == true)
        #expect(message["text"] as? String == "the river is rising")
        #expect(message["peer"] as? String == nodeA.peerID.hex)
        // As text, emergencies are listed first (the ordinary message came earlier).
        let inboxText = try await runScmesh(["inbox", "--data-dir", c], home: home)
        #expect(inboxText.standardOutput.hasPrefix("#"), "\(inboxText.standardOutput)")
        let firstHeader = inboxText.standardOutput.split(separator: "\n").first ?? ""
        #expect(firstHeader.contains("EMERGENCY BROADCAST"), "\(inboxText.standardOutput)")

        // Misuse: --broadcast without --emergency, or with a peer; unsubscribing the topic.
        let noFlag = try await runScmesh(["send", "--data-dir", a, "--broadcast", "x"], home: home)
        #expect(noFlag.status != 0 && noFlag.standardError.contains("give --emergency too"), "\(noFlag.standardError)")
        let withPeer = try await runScmesh(
            ["send", "--data-dir", a, "--emergency", "--broadcast", "bob", "x"],
            home: home
        )
        #expect(
            withPeer.status != 0 && withPeer.standardError.contains("takes the text alone"),
            "\(withPeer.standardError)"
        )
        let leave = try await runScmesh(["unsubscribe", "--data-dir", c, TopicName.emergency], home: home)
        #expect(
            leave.status != 0 && leave.standardError.contains("every node hears emergency broadcasts"),
            "\(leave.standardError)"
        )
    }
}
