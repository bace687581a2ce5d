import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Read receipts between two real `scmesh run` processes over TCP on 127.0.0.1: the
// reader has messages.read_receipts on; when it marks a message read, the sender's
// history shows it `read`, and the receipt appears in neither inbox nor conversation.
// Every wait is a bounded poll.

@Suite("read receipts between two node processes")
struct ReadReceiptProcessTests {
    @Test("scmesh read on the receiver turns the sender's message to status read; the receipt shows nowhere")
    func readShowsAtTheSender() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let home = nodes.home
        let (nodeA, nodeB) = try await nodes.startPair(secondArguments: ["--set", "messages.read_receipts=true"])
        let (a, b, idB) = (nodeA.dataDirectory, nodeB.dataDirectory, nodeB.peerID)
        let sent = try await runScmesh(
            ["send", "--data-dir", a, "--wait", "--json", idB.hex, "did you read this?"],
            home: home
        )
        #expect(sent.status == 0, "\(sent.standardError)")
        let id = try #require(try jsonObject(sent.standardOutput)["message_id"] as? String)
        func statusAtA() async throws -> String? {
            let history = try jsonObject(
                try await runScmesh(["history", "--data-dir", a, "--json"], home: home).standardOutput
            )
            return (history["messages"] as? [[String: Any]])?.first { $0["message_id"] as? String == id }?["status"]
                as? String
        }
        #expect(try await statusAtA() == "delivered")

        let read = try await runScmesh(["read", "--data-dir", b, String(id.prefix(8))], home: home)
        #expect(read.status == 0, "\(read.standardError)")
        try await eventually("A's history shows the message read", attempts: 3000) {
            try await statusAtA() == "read"
        }
        #expect(
            try await inboxTexts(dataDirectory: a, home: home).isEmpty,
            "the receipt is not a message for A's inbox"
        )
        let conversation = try jsonObject(
            try await runScmesh(
                [
                    "conversation", "--data-dir", b, "--json",
                    String(nodeA.peerID.hex.prefix(8)),
                ],
                home: home
            )
            .standardOutput
        )
        let texts = (conversation["messages"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
        #expect(texts == ["did you read this?"], "\(texts)")
    }
}
