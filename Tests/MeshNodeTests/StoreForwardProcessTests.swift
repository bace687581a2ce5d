import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing

// Issue 12's process test: store and forward across kill -9 of sender and receiver,
// with real `scmesh run` processes over TCP on 127.0.0.1 and their SQLite stores.
// Every wait is a bounded poll; nothing asserts a time.

@Suite("store and forward across kill -9")
struct StoreForwardProcessTests {
    static let messageCount = 200

    @Test(
        "200 messages queued for a peer that is down: sender and receiver each killed with SIGKILL during the drain; every message arrives exactly once, stays after another restart, and is delivered in the sender's history"
    )
    func twoHundredMessagesAcrossKills() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let (portA, portB) = (try freeLoopbackPort(), try freeLoopbackPort())
        // The sender knows where the receiver will listen; the receiver knows nothing.
        let argumentsA = [
            "--set", "transports.tcp.listen=127.0.0.1:\(portA)", "--set", "transports.tcp.bootstrap=127.0.0.1:\(portB)",
        ]
        let argumentsB = ["--set", "transports.tcp.listen=127.0.0.1:\(portB)"]
        let idB = try await nodes.createIdentity("b")
        // 1. The sender queues 200 messages for B, which has never run.
        let nodeA = try await nodes.start("a", argumentsA)
        let (a, clientA) = (nodeA.dataDirectory, nodeA.client)
        var queued: [MessageID] = []
        let padding = String(repeating: ".", count: 2_000)
        for index in 0..<Self.messageCount {
            let reply = try await clientA.call(.send(SendRequest(peer: idB.hex, text: "message \(index) \(padding)")))
            let sent = try reply.decode(SendReply.self)
            #expect(sent.status == .queued)
            queued.append(sent.messageID)
        }
        #expect(Set(queued).count == Self.messageCount)

        // 2. SIGKILL the sender and start it again: the queue survived.
        nodes.kill9(nodeA)
        try await nodes.restart(nodeA)
        let outbox = try await clientA.call(.outbox(MessageQuery())).decode(OutboxReply.self)
        #expect(outbox.total == Self.messageCount)
        #expect(outbox.messages.allSatisfy { $0.status == .queued && $0.waitingFor?.contains("link") == true })

        // 3. Start the receiver; SIGKILL the sender as soon as the drain has begun, then
        //    the receiver once more messages arrived; restart each.
        let nodeB = try await nodes.start("b", argumentsB)
        let clientB = nodeB.client
        var atFirstKill = 0
        try await eventually("the drain begins", attempts: 3000) {
            atFirstKill = try await inboxCount(clientB)
            return atFirstKill > 0
        }
        nodes.kill9(nodeA)
        try await nodes.restart(nodeA)
        var atSecondKill = 0
        try await eventually("the drain goes on after the sender's restart", attempts: 3000) {
            atSecondKill = try await inboxCount(clientB)
            return atSecondKill > atFirstKill || atSecondKill == Self.messageCount
        }
        nodes.kill9(nodeB)
        try await nodes.restart(nodeB)
        print(
            "store-and-forward process test: receiver held \(atFirstKill) messages when the sender was killed, \(atSecondKill) when the receiver was"
        )

        // 4. Everything arrives, each message once; the sender's history says delivered.
        try await eventually("the receiver's inbox has all 200", attempts: 6000) {
            try await inboxCount(clientB) == Self.messageCount
        }
        try await eventually("the sender's history shows all 200 delivered", attempts: 6000) {
            let history = try await clientA.call(.history(MessageQuery(limit: 1000))).decode(HistoryReply.self)
            return history.outboundCounts == ["delivered": Self.messageCount]
        }
        try await expectExactlyOnce(clientB, queued: queued, from: try await peerID(clientA), padding: padding)
        let history = try await runScmesh(["history", "--data-dir", a, "--json", "--limit", "1000"], home: home)
        let messages = try #require(try jsonObject(history.standardOutput)["messages"] as? [[String: Any]])
        #expect(messages.count == Self.messageCount)
        #expect(messages.allSatisfy { $0["status"] as? String == "delivered" })
        #expect(Set(messages.compactMap { $0["message_id"] as? String }) == Set(queued.map(\.hex)))
        let empty = try await runScmesh(["outbox", "--data-dir", a], home: home)
        #expect(empty.standardOutput.hasPrefix("outbox is empty"), "\(empty.standardOutput)")

        // 5. Another SIGKILL and restart of the receiver: the inbox still has them all,
        //    and sequence numbers go on from 200 (`inbox --after 200` polling works).
        nodes.kill9(nodeB)
        try await nodes.restart(nodeB)
        try await expectExactlyOnce(clientB, queued: queued, from: try await peerID(clientA), padding: padding)
        let later = try await clientA.call(.send(SendRequest(peer: idB.hex, text: "after everything", wait: true)))
            .decode(SendReply.self)
        #expect(later.status == .delivered)
        let newer = try await runScmesh(
            ["inbox", "--data-dir", nodeB.dataDirectory, "--json", "--after", "\(Self.messageCount)"],
            home: home
        )
        let newest = try #require(try jsonObject(newer.standardOutput)["messages"] as? [[String: Any]])
        #expect(newest.map { $0["seq"] as? Int } == [Self.messageCount + 1])
        #expect(newest.first?["text"] as? String == "after everything")

        #expect(try await nodes.terminate(nodeA) == 0)
        #expect(try await nodes.terminate(nodeB) == 0)
    }
}

private func inboxCount(_ client: ControlClient) async throws -> Int {
    try await client.call(.status).decode(StatusReply.self).inboxCount
}

private func peerID(_ client: ControlClient) async throws -> PeerID {
    try await client.call(.status).decode(StatusReply.self).peerID
}

/// The receiver's inbox holds exactly the queued messages, each once, with sequence
/// numbers 1...200 (none was stored twice and dropped).
private func expectExactlyOnce(
    _ client: ControlClient,
    queued: [MessageID],
    from sender: PeerID,
    padding: String
) async throws {
    let inbox = try await client.call(.inbox(InboxRequest())).decode(InboxReply.self)
    #expect(inbox.messages.count == queued.count)
    #expect(Set(inbox.messages.map(\.id)) == Set(queued))
    #expect(inbox.messages.allSatisfy { $0.from == sender })
    #expect(Set(inbox.messages.compactMap(\.text)) == Set((0..<queued.count).map { "message \($0) \(padding)" }))
    #expect(inbox.messages.map(\.seq) == Array(1...queued.count))
    #expect(inbox.totalReceived == queued.count)
}
