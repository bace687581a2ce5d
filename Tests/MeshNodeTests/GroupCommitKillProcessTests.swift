import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing

// Issue 42's crash test: the store commits writes in groups (one transaction, one fsync
// for every write waiting at that moment). Real `scmesh run` processes over TCP on
// 127.0.0.1; the receiver is killed with SIGKILL while many senders keep both stores
// committing, so the kill lands among group commits. Every wait is a bounded poll.

@Suite("group commit across kill -9 under load")
struct GroupCommitKillProcessTests {
    static let senders = 8
    static let perSender = 60

    @Test(
        "receiver killed under load: every message whose hop the sender saw acknowledged is in its store; after restarts of both nodes each message arrives exactly once"
    )
    func killUnderLoad() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let (portA, portB) = (try freeLoopbackPort(), try freeLoopbackPort())
        let idB = try await nodes.createIdentity("b")
        let nodeB = try await nodes.start("b", ["--set", "transports.tcp.listen=127.0.0.1:\(portB)"])
        let nodeA = try await nodes.start(
            "a",
            [
                "--set", "transports.tcp.listen=127.0.0.1:\(portA)", "--set",
                "transports.tcp.bootstrap=127.0.0.1:\(portB)",
            ]
        )
        let (a, b, clientA, clientB) = (nodeA.dataDirectory, nodeB.dataDirectory, nodeA.client, nodeB.client)
        let first = try await clientA.call(.send(SendRequest(peer: idB.hex, text: "first", wait: true)))
            .decode(SendReply.self)
        #expect(first.status == .delivered)

        // 1. Several clients send at once, so both stores have many writes waiting at
        //    every commit; B is killed once it holds a share of them.
        let total = Self.senders * Self.perSender
        let sending = Task {
            try await withThrowingTaskGroup(of: [MessageID].self) { group in
                for sender in 0..<Self.senders {
                    group.addTask {
                        // Each message has its ID from the start, so a send cut off by
                        // the sender's kill is sent again with it: queued once either way.
                        var ids: [MessageID] = []
                        for index in 0..<Self.perSender {
                            let id = MessageID.random()
                            let request = NodeCommand.send(
                                SendRequest(peer: idB.hex, text: Self.text(sender, index), id: id.hex)
                            )
                            var reply: SendReply?
                            try await eventually(
                                "the sender queues message \(index) of sender \(sender)",
                                attempts: 3000
                            ) {
                                reply = try await ControlClient(dataDirectory: a).call(request).decode(SendReply.self)
                                return true
                            }
                            #expect(reply?.messageID == id)
                            ids.append(id)
                        }
                        return ids
                    }
                }
                var all: [MessageID] = []
                for try await ids in group { all += ids }
                return all
            }
        }
        try await eventually("the receiver holds some of the burst", attempts: 6000) {
            try await storedCount(clientB) >= 1 + total / 8
        }
        nodes.kill9(nodeB)

        // 2. What A saw acknowledged (its history says the hop took it: sent or
        //    delivered) is in B's file, once; nothing is in it twice.
        let history = try await clientA.call(.history(MessageQuery(limit: 5000))).decode(HistoryReply.self)
        let acknowledged = Set(
            history.messages.filter { $0.direction == .outbound && [.sent, .delivered].contains($0.status) }.map(\.id)
        )
        #expect(acknowledged.count > 1)
        let store = try MeshStore(path: b + "/store.sqlite")
        let entries = try await store.inbox.entries()
        try store.close()
        let stored = entries.map(\.message.id)
        #expect(
            acknowledged.isSubset(of: Set(stored)),
            "\(acknowledged.subtracting(stored).count) acknowledged messages are missing from the receiver's store"
        )
        #expect(Set(stored).count == stored.count)
        #expect(entries.map(\.sequence) == Array(1...entries.count))
        print(
            "group commit kill test: receiver stored \(stored.count) messages when killed; the sender had \(acknowledged.count) acknowledged"
        )

        // 3. B comes back; A is killed while the burst goes on, and comes back too.
        try await nodes.restart(nodeB)
        let atRestart = try await storedCount(clientB)
        try await eventually("the drain goes on after the receiver's restart", attempts: 6000) {
            try await storedCount(clientB) > atRestart
        }
        nodes.kill9(nodeA)
        try await nodes.restart(nodeA)
        let queued = try await sending.value

        // 4. Every message the clients saw queued arrives once.
        #expect(queued.count == total)
        try await eventually("the receiver holds every message", attempts: 9000) {
            try await storedCount(clientB) == total + 1
        }
        try await eventually("the sender's history shows every message delivered", attempts: 9000) {
            let history = try await clientA.call(.history(MessageQuery(limit: 5000))).decode(HistoryReply.self)
            return history.outboundCounts == ["delivered": total + 1]
        }
        let inbox = try await clientB.call(.inbox(InboxRequest(limit: 5000))).decode(InboxReply.self)
        #expect(inbox.messages.count == total + 1)
        #expect(Set(inbox.messages.map(\.id)) == Set(queued + [first.messageID]))
        #expect(inbox.messages.map(\.seq) == Array(1...(total + 1)))
        let expected = (0..<Self.senders).flatMap { sender in (0..<Self.perSender).map { Self.text(sender, $0) } }
        #expect(Set(inbox.messages.compactMap(\.text)) == Set(expected + ["first"]))
        #expect(inbox.totalReceived == total + 1)
    }

    static func text(_ sender: Int, _ index: Int) -> String {
        "sender \(sender) message \(index)"
    }
}

private func storedCount(_ client: ControlClient) async throws -> Int {
    try await client.call(.status).decode(StatusReply.self).inboxCount
}
