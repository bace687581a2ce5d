import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// A payload above the outbox's file threshold waits in a file beside the store, not in
// SQLite: it must survive kill -9 of the node once `scmesh send -` said "queued", reach
// the peer byte for byte, and leave no file behind once it is sent.

@Suite("large payloads across kill -9")
struct LargePayloadProcessTests {
    @Test(
        "scmesh send - of 3 MiB to a peer that is down: queued in a payload file, kept across SIGKILL, delivered byte for byte, the file removed; the receiver's payload file survives its own SIGKILL and `scmesh inbox --save` downloads it raw from the HTTP API"
    )
    func largePayloadSurvivesKill() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let (directory, home) = (nodes.directory, nodes.home)
        let (portA, portB) = (try freeLoopbackPort(), try freeLoopbackPort())
        let common = ["--set", "http.listen=127.0.0.1:0"]
        let argumentsA =
            [
                "--set", "transports.tcp.listen=127.0.0.1:\(portA)", "--set",
                "transports.tcp.bootstrap=127.0.0.1:\(portB)",
            ] + common
        let argumentsB = ["--set", "transports.tcp.listen=127.0.0.1:\(portB)"] + common
        let idB = try await nodes.createIdentity("b")
        let (a, b) = (directory.file("a"), directory.file("b"))
        let clientA = ControlClient(dataDirectory: a)
        let clientB = ControlClient(dataDirectory: b)
        let payloads = a + "/store.sqlite-payloads"

        let nodeA = try await nodes.start("a", argumentsA)
        // Not text: every byte value, in an order no run of the encoder could invent.
        let payload = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 7) }
        let sent = try await runScmesh(
            ["send", "--data-dir", a, "--json", idB.hex, "-"],
            environment: scmeshEnvironment(home: home),
            input: payload
        )
        #expect(sent.status == 0, "\(sent.standardError)")
        let reply = try jsonObject(sent.standardOutput)
        #expect(reply["status"] as? String == "queued")
        #expect(reply["bytes"] as? Int == payload.count)
        let messageID = try #require(reply["message_id"] as? String)
        let files = try FileManager.default.contentsOfDirectory(atPath: payloads)
        #expect(files.count == 1 && files.first?.hasPrefix(messageID) == true, "\(files)")

        // SIGKILL the sender as soon as the reply said queued; start it again.
        nodes.kill9(nodeA)
        try await nodes.restart(nodeA)
        let outbox = try await clientA.call(.outbox(MessageQuery())).decode(OutboxReply.self)
        #expect(outbox.total == 1)

        // The receiver comes up: the payload arrives whole, and the sender's file goes.
        let nodeB = try await nodes.start("b", argumentsB)
        try await eventually("the receiver has the message", attempts: 3000) {
            try await clientB.call(.status).decode(StatusReply.self).inboxCount == 1
        }
        let inbox = try await clientB.call(.inbox(InboxRequest())).decode(InboxReply.self)
        let received = try #require(inbox.messages.first)
        #expect(received.id.hex == messageID)
        // Compared as a Bool: a failure would otherwise print 3 MiB of both.
        let receivedBytes = received.payloadBase64.flatMap { Data(base64Encoded: $0) }.map(Array.init)
        let same = receivedBytes == payload
        #expect(same, "received \(receivedBytes?.count ?? 0) bytes of \(payload.count), not the bytes sent")
        try await eventually("the sender's payload file is removed once the message is sent", attempts: 1500) {
            try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty
        }

        // The receiver keeps it in a payload file of its own, which a kill -9 and a
        // restart keep; `scmesh inbox --save` gets it byte for byte from there.
        let receivedFiles = try FileManager.default.contentsOfDirectory(atPath: b + "/store.sqlite-payloads")
        #expect(
            receivedFiles.count == 1 && receivedFiles.first?.hasPrefix("inbox-\(messageID)-") == true,
            "\(receivedFiles)"
        )
        nodes.kill9(nodeB)
        try await nodes.restart(nodeB)
        #expect(try FileManager.default.contentsOfDirectory(atPath: b + "/store.sqlite-payloads") == receivedFiles)
        let saved = directory.file("saved")
        let save = try await runScmesh(["inbox", "--data-dir", b, "--save", saved], home: home)
        #expect(save.status == 0, "\(save.standardError)")
        #expect(FileManager.default.contents(atPath: saved + "/" + messageID).map(Array.init) == payload)
        #expect(save.standardError.contains("saved #1 to \(saved)/\(messageID)"), "\(save.standardError)")
        // Downloaded raw from the HTTP API through a temporary file that is gone now;
        // the listing itself carried no payload.
        #expect(try FileManager.default.contentsOfDirectory(atPath: saved) == [messageID])
        #expect(save.standardOutput.utf8.count < 1_000, "\(save.standardOutput.prefix(300))")
        let listed = try await runScmesh(["inbox", "--data-dir", b, "--json"], home: home)
        let message = try #require((try jsonObject(listed.standardOutput)["messages"] as? [[String: Any]])?.first)
        #expect(message["payload_base64"] == nil && message["bytes"] as? Int == payload.count)
        #expect(
            (message["head_base64"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init)
                == Array(payload.prefix(1024))
        )
    }

    @Test(
        "scmesh send - with standard input a file already read in part: the node gets exactly the rest (the client hands the file to sendfile from its offset), delivered byte for byte"
    )
    func standardInputFromAFileOffset() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let (nodeB, nodeA) = try await nodes.startPair("b", "a", both: ["--set", "http.listen=127.0.0.1:0"])
        let (directory, a, idB, clientB) = (nodes.directory, nodeA.dataDirectory, nodeB.peerID, nodeB.client)

        // 1000 bytes the shell reads first (dd: one read of exactly that many), then
        // 2.5 MiB of every byte value in an order no encoder could invent.
        let skipped = [UInt8](repeating: 0xEE, count: 1000)
        let payload = (0..<(5 << 19)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 9) }
        let file = directory.file("payload.bin")
        try Data(skipped + payload).write(to: URL(fileURLWithPath: file))
        let command =
            "{ dd bs=1000 count=1 of=/dev/null 2>/dev/null; exec '\(scmeshExecutable.path)' send --data-dir '\(a)' --json \(idB.hex) -; } < '\(file)'"
        let sent = try await runProcess("/bin/sh", ["-c", command])
        #expect(sent.status == 0, "\(sent.standardError)")
        let reply = try jsonObject(String(decoding: sent.output, as: UTF8.self))
        #expect(reply["bytes"] as? Int == payload.count)

        try await eventually("the receiver has the message", attempts: 3000) {
            try await clientB.call(.status).decode(StatusReply.self).inboxCount == 1
        }
        let inbox = try await clientB.call(.inbox(InboxRequest())).decode(InboxReply.self)
        let received = try #require(inbox.messages.first)
        #expect(received.id.hex == reply["message_id"] as? String)
        let bytes = received.payloadBase64.flatMap { Data(base64Encoded: $0) }.map(Array.init) ?? []
        // Compared as a Bool: a failure names the first differing byte, not 5 MiB of both.
        let firstDifference = zip(bytes, payload).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(
            bytes.count == payload.count && firstDifference == nil,
            "received \(bytes.count) bytes of \(payload.count); first difference at byte \(firstDifference.map(String.init) ?? "none")"
        )
    }
}
