import Foundation
import MeshCore

/// Human-readable renderings of control replies, as `scmesh` prints them without `--json`.
public enum TextReport {
    /// What the router refused or closed because of a remote, by reason (the non-zero
    /// ones): the `refused router:` line of `scmesh status`.
    public static func routerRefusals(_ stats: RouterStats) -> [String: Int] {
        var counts: [String: Int] = [
            "unauthenticated_evicted": stats.unauthenticatedLinksEvicted,
            "frames_refused": stats.framesRefused,
            "sink_refused": stats.sinkRefusals,
            "write_stalled_links": stats.writeStalledLinksClosed,
        ]
        for (code, count) in stats.handshakeFailuresByReason { counts["handshake_failed.\(code)"] = count }
        for (code, count) in stats.malformedInputs { counts["malformed.\(code)"] = count }
        for (code, count) in stats.sealedMessagesRejected { counts["sealed_rejected.\(code)"] = count }
        return counts.filter { $0.value > 0 }
    }

    /// `scmesh peers`.
    public static func peers(_ reply: PeersReply, full: Bool = false) -> String {
        guard !reply.peers.isEmpty else { return "no peers with a live link" }
        var rows = [["PEER", "WIRE", "FEATURES", "TRANSPORT", "PRIORITY", "ADDRESS", "RTT", "IN FLIGHT", "STATE"]]
        for peer in reply.peers {
            let wire = "v\(peer.wireVersion)"
            let features = featureSummary(peer.capabilities)
            for (index, link) in peer.links.enumerated() {
                rows.append([
                    index == 0
                        ? named(
                            peer.peer,
                            alias: reply.aliases?[peer.peer.hex],
                            name: reply.names?[peer.peer.hex],
                            full: full
                        ) : "",
                    index == 0 ? wire : "",
                    index == 0 ? features : "",
                    escaped(link.transport), String(link.priority), escaped(link.address),
                    link.rttMilliseconds.map { String(format: "%.1f ms", $0) } ?? "-",
                    String(link.inFlight),
                    link.transport == peer.activeTransport ? "active" : "",
                ])
            }
            if peer.links.isEmpty {
                rows.append([
                    named(
                        peer.peer,
                        alias: reply.aliases?[peer.peer.hex],
                        name: reply.names?[peer.peer.hex],
                        full: full
                    ),
                    wire, features, "-", "-", "-",
                    "-", "-", "",
                ])
            }
        }
        return table(rows, freeText: [2, 5])
    }

    /// A peer's announced features in a `scmesh peers` cell: `all`, `minimal` (none),
    /// or the names, comma-separated.
    static func featureSummary(_ names: [String]) -> String {
        if names.isEmpty { return "minimal" }
        if names == Capabilities.all.names { return "all" }
        return names.map { escaped($0) }.joined(separator: ",")
    }

    /// An announcement sequence as a reader can take it in. A node starts its
    /// sequences from the wall clock (milliseconds shifted left by 20 bits), so such
    /// a sequence reads as the count of announcements since the node started
    /// announcing and how long ago that was: `#3 (2h 5m ago)`; a small one stays a
    /// number.
    package static func sequence(_ value: UInt64, now: Date = Date()) -> String {
        let milliseconds = value >> 20
        // Thirteen decimal digits of milliseconds: a clock-based sequence, not a counter.
        guard (1_000_000_000_000...9_999_999_999_999).contains(milliseconds) else { return String(value) }
        let started = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return "#\(value & 0xFFFFF) (\(duration(max(0, now.timeIntervalSince(started)))) ago)"
    }

    /// A peer as every listing names it: a contact as `alias (8 hex…)`; a stranger that
    /// claimed a name in its handshake (its `node.name`) as `~name (8 hex…)`, the tilde
    /// marking a claim that is not a contact's alias; anyone else by the first 8 hex
    /// characters of its ID (`8 hex…`, a prefix every command takes). The alias wins
    /// over a claimed name. With `full`, the whole ID in place of the 8.
    ///
    /// ```swift
    /// TextReport.named(bob, alias: "bob", full: false)                 // "bob (f74da8b4…)"
    /// TextReport.named(dave, alias: nil, name: "dave", full: false)    // "~dave (9a0c11e2…)"
    /// TextReport.named(carol, alias: nil, full: false)                 // "3d4017c3…"
    /// ```
    public static func named(_ peer: PeerID, alias: String?, name: String? = nil, full: Bool) -> String {
        let id = full ? peer.hex : peer.short + "…"
        if let alias { return "\(escaped(alias)) (\(id))" }
        if let name { return "\(claimedNameMark)\(escaped(name)) (\(id))" }
        return id
    }

    /// What precedes a stranger's claimed name wherever a peer is printed.
    public static let claimedNameMark = "~"

    /// A message ID in a listing: its first 8 hex characters (a prefix every command
    /// that takes a message ID accepts), or the whole ID when `full`.
    public static func messageID(_ id: MessageID, full: Bool) -> String {
        full ? id.hex : String(id.hex.prefix(8))
    }

    /// `scmesh routes`: one row per destination, nearest first. The transport name
    /// comes from the node but is escaped like every other string.
    public static func routes(_ reply: RoutesReply, full: Bool = false) -> String {
        guard !reply.routes.isEmpty else { return "no routes (no peer reachable)" }
        var rows = [["DESTINATION", "NEXT HOP", "HOPS", "TRANSPORT", "AGE", "SEQUENCE"]]
        let ordered = reply.routes.sorted { ($0.hops, $0.destination) < ($1.hops, $1.destination) }
        for route in ordered {
            rows.append([
                named(
                    route.destination,
                    alias: reply.aliases?[route.destination.hex],
                    name: reply.names?[route.destination.hex],
                    full: full
                ),
                route.nextHop == route.destination
                    ? "direct"
                    : named(
                        route.nextHop,
                        alias: reply.aliases?[route.nextHop.hex],
                        name: reply.names?[route.nextHop.hex],
                        full: full
                    ),
                String(route.hops), escaped(route.transport),
                duration(Double(route.ageMilliseconds) / 1000), route.sequence.map { sequence($0) } ?? "-",
            ])
        }
        return table(rows)
    }

    /// `scmesh inbox`. The sender is named as in every listing (``named(_:alias:name:full:)``).
    /// Emergencies come first; the others in the order received, or with `bySent`
    /// grouped by sender (in the order of each one's first message) and in the order
    /// each sender sent them.
    public static func inbox(_ reply: InboxReply, full: Bool = false, bySent: Bool = false) -> String {
        guard !reply.messages.isEmpty else { return "inbox is empty" }
        let emergencies = reply.messages.filter { $0.emergency == true }
        var others = reply.messages.filter { $0.emergency != true }
        if bySent { others = sentOrder(others) }
        return (emergencies + others).map { inboxMessage($0, full: full) }.joined(separator: "\n")
    }

    /// `messages` grouped by sender, the senders in the order of their first message
    /// here, each sender's in the order sent (received, when the send time is
    /// unknown; then by sequence).
    public static func sentOrder(_ messages: [InboxReply.Message]) -> [InboxReply.Message] {
        var firsts: [PeerID: Int] = [:]
        for message in messages where firsts[message.from] == nil { firsts[message.from] = message.seq }
        return messages.sorted { a, b in
            let (first, second) = (firsts[a.from] ?? 0, firsts[b.from] ?? 0)
            if first != second { return first < second }
            let (sentA, sentB) = (a.sentAt ?? a.receivedAt, b.sentAt ?? b.receivedAt)
            return sentA != sentB ? sentA < sentB : a.seq < b.seq
        }
    }

    /// One message of `scmesh inbox` (also each new one of `scmesh inbox --follow`):
    /// its sequence number, the start of its ID, when it was received and, when the
    /// sender's envelope says, sent.
    public static func inboxMessage(_ message: InboxReply.Message, full: Bool = false) -> String {
        let sender = named(message.from, alias: message.alias, name: message.name, full: full)
        let sent = message.sentAt.map { "  sent \(timestamp($0))" } ?? ""
        let header =
            "#\(message.seq)  \(messageID(message.id, full: full))  received \(timestamp(message.receivedAt))\(sent)  from \(sender)  via \(escaped(message.transport))  \(message.bytes) bytes"
            + (message.broadcast == true ? "" : message.topic.map { "  topic \(escaped($0))" } ?? "")
            + (message.broadcast == true ? "  🚨 EMERGENCY BROADCAST" : message.emergency == true ? "  🚨 EMERGENCY" : "")
            + (message.unread == true ? "  unread" : "")
        return header + "\n" + inboxBody(message)
    }

    /// The payload part of ``inboxMessage(_:)``: the text; else, from a listing
    /// without payloads, the start of a longer text (at most ``previewLines`` lines of
    /// its first bytes); else the start of the base64.
    static func inboxBody(_ message: InboxReply.Message) -> String {
        if let text = message.text { return "    " + escaped(text, newlines: "\n    ") }
        let head = message.headBase64.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
        if let head, head.count < message.bytes, let start = textStart(head) {
            let lines = start.split(separator: "\n", maxSplits: previewLines, omittingEmptySubsequences: false).prefix(
                previewLines
            )
            return "    " + escaped(lines.joined(separator: "\n"), newlines: "\n    ")
                + "…\n    (\(message.bytes) bytes in all; --save DIR writes them to a file)"
        }
        let base64 = message.payloadBase64 ?? message.headBase64 ?? ""
        // 76 base64 characters are the first 57 bytes.
        return "    (binary, base64) \(base64.prefix(76))\(message.bytes > 57 ? "…" : "")"
    }

    /// The lines of a long text's start that `scmesh inbox` shows.
    static let previewLines = 10

    /// `head`, the start of a payload, as text when it is valid UTF-8 but for a
    /// character cut off at its end; nil otherwise.
    static func textStart(_ head: [UInt8]) -> String? {
        for cut in 0...min(3, head.count) {
            if let text = String(validating: head.dropLast(cut), as: UTF8.self) { return text }
        }
        return nil
    }

    /// `text` with every character that a terminal would act on made visible: C0
    /// controls (but newlines when `newlines` is given, which replaces each), DEL,
    /// C1 controls and the bidirectional overrides become `\u{1B}`-style escapes, so
    /// remote data (a message, a peer's address) cannot clear the screen, retitle
    /// the window or reorder what is shown. Linear in the text's length.
    ///
    /// ```swift
    /// TextReport.escaped("\u{1B}[2J hi")  // "\\u{1B}[2J hi"
    /// ```
    public static func escaped(_ text: String, newlines: String? = nil) -> String {
        TerminalText.escaped(text, newlines: newlines)
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m \(total % 60)s" }
        if total < 86_400 { return "\(total / 3600)h \(total % 3600 / 60)m" }
        return "\(total / 86_400)d \(total % 86_400 / 3600)h"
    }

    /// `rows` (a header first) fitted to the terminal (``TerminalWidth``): the columns
    /// `freeText` are cut with an ellipsis when the rows are wider.
    static func table(_ rows: [[String]], freeText: [Int] = []) -> String {
        TextTable.render(rows, freeText: freeText, width: TerminalWidth.current())
    }
}
