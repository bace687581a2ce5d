import Foundation
import MeshCore
import Testing

@testable import MeshNode

// Issue 43: tables fit the terminal, peers are named one way, the inbox can list in
// send order. Pure formatting, no node.

@Suite struct TextTableTests {
    @Test("a table wider than the width cuts its widest free-text column with an ellipsis; other columns stay whole")
    func fitsTheWidth() {
        let rows = [
            ["ID", "PEER", "NOTE", "REASON"],
            ["0123456789abcdef", "bob", String(repeating: "n", count: 60), "short"],
            ["fedcba9876543210", "carol", "a note", String(repeating: "r", count: 30)],
        ]
        let text = TextTable.render(rows, freeText: [2, 3], width: 60)
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.count <= 60 }, "\(text)")
        #expect(lines[0].hasPrefix("ID                PEER   NOTE"), "\(lines[0])")
        #expect(lines[1].hasPrefix("0123456789abcdef  bob    nnn"), "\(lines[1])")
        #expect(lines[1].contains("…") && lines[2].contains("…"), "\(text)")
        // Columns still line up: each row's third column starts where the header's does.
        let start = lines[0].distance(from: lines[0].startIndex, to: lines[0].range(of: "NOTE")!.lowerBound)
        #expect(lines[2].dropFirst(start).hasPrefix("a note"), "\(text)")

        // Wide enough: nothing is cut, the last column keeps no trailing spaces.
        let wide = TextTable.render(rows, freeText: [2, 3], width: 200)
        #expect(!wide.contains("…") && !wide.split(separator: "\n").contains { $0.hasSuffix(" ") })
        // No free-text column: the row stays whole, however wide (IDs are never cut).
        #expect(!TextTable.render(rows, freeText: [], width: 20).contains("…"))
        // A free column is never cut below its header or 8 characters.
        let narrow = TextTable.render(
            [["N", "LONGHEADER"], ["1", String(repeating: "x", count: 40)]],
            freeText: [1],
            width: 5
        )
        #expect(narrow.split(separator: "\n").last == "1  xxxxxxxxx…")
    }

    @Test("the width is COLUMNS when set, else 100 when standard output is no terminal")
    func width() {
        #expect(TerminalWidth.current(environment: ["COLUMNS": "132"]) == 132)
        #expect(TerminalWidth.current(environment: ["COLUMNS": "10"]) == 40)
        if isatty(STDOUT_FILENO) == 0 {
            #expect(TerminalWidth.current(environment: [:]) == TerminalWidth.fallback)
            #expect(TerminalWidth.current(environment: ["COLUMNS": "wide"]) == 100)
        }
    }

    @Test("a peer is `alias (8 hex…)` or `8 hex…`, whole with full; a message ID its first 8 hex characters")
    func naming() throws {
        let peer = try PeerID(bytes: [UInt8](repeating: 0xab, count: 32))
        #expect(TextReport.named(peer, alias: "bob", full: false) == "bob (abababab…)")
        #expect(TextReport.named(peer, alias: nil, full: false) == "abababab…")
        #expect(TextReport.named(peer, alias: "bob", full: true) == "bob (\(peer.hex))")
        #expect(TextReport.named(peer, alias: nil, full: true) == peer.hex)
        #expect(TextReport.named(peer, alias: "e\u{1B}[2J", full: false) == "e\\u{1B}[2J (abababab…)")
        let id = MessageID.random()
        #expect(TextReport.messageID(id, full: false) == String(id.hex.prefix(8)))
        #expect(TextReport.messageID(id, full: true) == id.hex)
    }

    @Test(
        "inbox --by-sent: each sender's messages together, in the order sent; the receive time stands in when unknown"
    )
    func sentOrder() throws {
        let (bob, carol) = (
            try PeerID(bytes: [UInt8](repeating: 1, count: 32)), try PeerID(bytes: [UInt8](repeating: 2, count: 32))
        )
        func message(_ seq: Int, _ from: PeerID, sent: Double?, received: Double) -> InboxReply.Message {
            InboxReply.Message(
                seq: seq,
                id: MessageID.random(),
                from: from,
                transport: "tcp",
                receivedAt: Date(timeIntervalSince1970: received),
                sentAt: sent.map { Date(timeIntervalSince1970: $0) },
                bytes: 1,
                text: "#\(seq)"
            )
        }
        // Bob's #2 was sent last but arrived first (it went direct; #1 and #3 waited).
        let messages = [
            message(1, bob, sent: 300, received: 400), message(2, carol, sent: nil, received: 401),
            message(3, bob, sent: 100, received: 402), message(4, bob, sent: 200, received: 403),
        ]
        #expect(TextReport.sentOrder(messages).map(\.seq) == [3, 4, 1, 2])
        let text = TextReport.inbox(InboxReply(messages: messages, totalReceived: 4), bySent: true)
        let order = text.split(separator: "\n").filter { $0.hasPrefix("#") }.map { $0.prefix(2) }
        #expect(order == ["#3", "#4", "#1", "#2"], "\(text)")
        #expect(text.contains("sent 1970-01-01T00:01:40Z"), "\(text)")
        // Without --by-sent: the order received.
        let plain = TextReport.inbox(InboxReply(messages: messages, totalReceived: 4))
        #expect(
            plain.split(separator: "\n").filter { $0.hasPrefix("#") }.map { $0.prefix(2) } == ["#1", "#2", "#3", "#4"]
        )
    }
}
