import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Issue 43, what a newcomer reads: payload sizes (never an envelope's), one naming of
// peers and messages, tables that fit, when a message was sent, message IDs by their
// start. One pair of real `scmesh` nodes over TCP on 127.0.0.1; every wait bounded.

@Suite("scmesh for a newcomer: listings")
struct FirstHourListingsProcessTests {
    @Test(
        "payload sizes in outbox, history and trace; peers and messages named short (--full whole); tables fit COLUMNS; inbox sent times and --by-sent; message ID prefixes in read, trace and inbox delete; an oversize stdin payload's size"
    )
    func listings() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let portB = try freeLoopbackPort()
        let common = ["--set", "http.enabled=false"]
        let b = try await nodes.start("b", ["--set", "transports.tcp.listen=127.0.0.1:\(portB)"] + common)
        let a = try await nodes.start("a", ["--set", "transports.tcp.listen=127.0.0.1:0"] + common)
        let (dataA, dataB) = (a.dataDirectory, b.dataDirectory)
        #expect(try await nodes.run(["contacts", "add", "--data-dir", dataA, "bob", b.peerID.hex]).status == 0)

        // Queued with no link: sealed for a relay at once. The listings show the
        // payload's size, the trace the envelope's, labelled.
        let prefix = "abcd0000"
        let ids = ["1", "2"].map { prefix + $0 + String(repeating: "0", count: 23) }
        for (id, text) in zip(ids, ["first", "second"]) {
            let sent = try await nodes.run(["send", "--data-dir", dataA, "--id", id, "bob", text])
            #expect(sent.status == 0, "\(sent.standardError)")
        }
        let outbox = try jsonObject(try await nodes.run(["outbox", "--data-dir", dataA, "--json"]).standardOutput)
        #expect(outbox["total_bytes"] as? Int == 11, "\(outbox)")
        let queued = try #require(outbox["messages"] as? [[String: Any]])
        #expect(queued.map { $0["bytes"] as? Int } == [5, 6], "\(queued)")
        let outboxText = try await nodes.run(["outbox", "--data-dir", dataA])
        #expect(
            outboxText.standardOutput.contains("2 messages on the way, 11 payload bytes"),
            "\(outboxText.standardOutput)"
        )
        #expect(outboxText.standardOutput.contains("bob (\(b.peerID.short)…)"), "\(outboxText.standardOutput)")
        #expect(outboxText.standardOutput.contains("  \(prefix)  "), "\(outboxText.standardOutput)")
        #expect(!outboxText.standardOutput.contains(ids[0]), "\(outboxText.standardOutput)")
        #expect(
            try await nodes.run(["outbox", "--data-dir", dataA, "--full"]).standardOutput.contains(ids[0])
        )
        let trace = try await nodes.run(["history", "--data-dir", dataA, "--trace", ids[0]])
        #expect(trace.standardOutput.contains("bytes       5 (the payload"), "\(trace.standardOutput)")
        #expect(trace.standardOutput.contains("sealed end to end (envelope "), "\(trace.standardOutput)")

        // An ambiguous message ID prefix lists its candidates.
        let ambiguous = try await nodes.run(["history", "--data-dir", dataA, "--trace", prefix])
        #expect(ambiguous.status == 1)
        #expect(
            ambiguous.standardError.contains(ids[0]) && ambiguous.standardError.contains(ids[1]),
            "\(ambiguous.standardError)"
        )

        // Linked: both arrive, and a third goes straight over the link, unsealed.
        let dial = try await nodes.run(["dial", "--data-dir", dataA, "tcp", "127.0.0.1:\(portB)"])
        #expect(dial.status == 0, "\(dial.standardError)")
        try await eventually("both queued messages arrive", attempts: 1500) {
            try await inbox(dataDirectory: dataB, home: nodes.home).count == 2
        }
        let third = try await nodes.run(["send", "--data-dir", dataA, "--timeout", "30", "bob", "third"])
        #expect(third.status == 0, "\(third.standardError)")
        try await eventually("every message is delivered", attempts: 1500) {
            (try await a.client.call(.outbox(MessageQuery())).decode(OutboxReply.self)).total == 0
        }
        // Events name the contact as listings do; the settings table has its headers.
        let events = try await nodes.run(["events", "--data-dir", dataA])
        #expect(events.standardOutput.contains("peer=bob (\(b.peerID.short)…)"), "\(events.standardOutput)")
        let settings = try await nodes.run(["settings", "--data-dir", dataA])
        #expect(settings.standardOutput.hasPrefix("SETTING"), "\(settings.standardOutput)")
        let history = try jsonObject(try await nodes.run(["history", "--data-dir", dataA, "--json"]).standardOutput)
        let entries = try #require(history["messages"] as? [[String: Any]])
        #expect(Set(entries.compactMap { $0["bytes"] as? Int }) == [5, 6], "\(entries)")

        // B's inbox: when each was sent (the sealed ones), named by the start of A's ID.
        let received = try await inbox(dataDirectory: dataB, home: nodes.home)
        #expect(received.count == 3)
        #expect(received.filter { $0["sent_at"] != nil }.count == 2, "\(received)")
        #expect(received.first { $0["text"] as? String == "third" }?["sent_at"] == nil, "\(received)")
        let inboxText = try await nodes.run(["inbox", "--data-dir", dataB, "--by-sent"])
        #expect(inboxText.status == 0, "\(inboxText.standardError)")
        let headers = inboxText.standardOutput.split(separator: "\n").filter { $0.hasPrefix("#") }
        #expect(headers.count == 3, "\(inboxText.standardOutput)")
        #expect(headers.filter { $0.contains("  sent ") }.count == 2, "\(inboxText.standardOutput)")
        #expect(headers.allSatisfy { $0.contains("from \(a.peerID.short)…  via tcp") }, "\(inboxText.standardOutput)")
        #expect(!inboxText.standardOutput.contains(a.peerID.hex))
        #expect(try await nodes.run(["inbox", "--data-dir", dataB, "--full"]).standardOutput.contains(a.peerID.hex))

        // A stranger who wrote is added by the start of its ID; then named by alias.
        let added = try await nodes.run([
            "contacts", "add", "--data-dir", dataB, "alice", String(a.peerID.hex.prefix(8)),
        ])
        #expect(added.status == 0, "\(added.standardError)")
        let named = try await nodes.run(["conversations", "--data-dir", dataB])
        #expect(named.standardOutput.contains("alice (\(a.peerID.short)…)"), "\(named.standardOutput)")

        // Message IDs by their start: read refuses an ambiguous one, listing both;
        // inbox delete --id takes a unique one.
        let read = try await nodes.run(["read", "--data-dir", dataB, prefix])
        #expect(read.status == 1)
        #expect(read.standardError.contains(ids[0]) && read.standardError.contains(ids[1]), "\(read.standardError)")
        #expect(try await nodes.run(["read", "--data-dir", dataB, String(ids[1].prefix(9))]).status == 0)
        let deleted = try await nodes.run(["inbox", "delete", "--data-dir", dataB, "--id", String(ids[0].prefix(9))])
        #expect(deleted.status == 0, "\(deleted.standardError)")
        #expect(deleted.standardOutput.contains("deleted 1 entry"), "\(deleted.standardOutput)")
        #expect(try await inbox(dataDirectory: dataB, home: nodes.home).count == 2)

        // Tables fit COLUMNS: a long text is cut with an ellipsis, no line is wider.
        let long = String(repeating: "a long line of text ", count: 4)
        #expect(try await nodes.run(["send", "--data-dir", dataA, "--timeout", "30", "bob", long]).status == 0)
        var environment = scmeshEnvironment(home: nodes.home)
        environment["COLUMNS"] = "90"
        let narrow = try await runScmesh(["history", "--data-dir", dataA], environment: environment)
        let lines = narrow.standardOutput.split(separator: "\n")
        #expect(lines.first?.hasPrefix("WHEN") == true, "\(narrow.standardOutput)")
        #expect(lines.allSatisfy { $0.count <= 90 }, "\(narrow.standardOutput)")
        #expect(lines.contains { $0.contains("a long line of…") || $0.contains("text a…") || $0.hasSuffix("…") })

        // A payload from standard input over the node's limit: reading stops there and
        // the refusal names the limit.
        let small = try await nodes.start(
            "c",
            ["--set", "transports.tcp.listen=127.0.0.1:0", "--set", "max_message_size=100000"] + common
        )
        let oversize = try await runScmesh(
            ["send", "--data-dir", small.dataDirectory, small.peerID.hex, "-"],
            environment: scmeshEnvironment(home: nodes.home),
            input: [UInt8](repeating: 0x61, count: 300_000)
        )
        #expect(oversize.status == 1)
        #expect(
            oversize.standardError.contains("more than the node's max_message_size of 100000 bytes"),
            "\(oversize.standardError)"
        )
        #expect(oversize.standardError.contains("nothing was queued"), "\(oversize.standardError)")
    }
}
