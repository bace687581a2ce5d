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
                    index == 0 ? named(peer.peer, reply.aliases, full: full) : "", index == 0 ? wire : "",
                    index == 0 ? features : "",
                    escaped(link.transport), String(link.priority), escaped(link.address),
                    link.rttMilliseconds.map { String(format: "%.1f ms", $0) } ?? "-",
                    String(link.inFlight),
                    link.transport == peer.activeTransport ? "active" : "",
                ])
            }
            if peer.links.isEmpty {
                rows.append([named(peer.peer, reply.aliases, full: full), wire, features, "-", "-", "-", "-", "-", ""])
            }
        }
        return table(rows)
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
    /// a sequence reads as the time the node started announcing and the count since:
    /// an ISO 8601 start time, then `#` and the count; a small one stays a number.
    package static func sequence(_ value: UInt64) -> String {
        let milliseconds = value >> 20
        // Thirteen decimal digits of milliseconds: a clock-based sequence, not a counter.
        guard (1_000_000_000_000...9_999_999_999_999).contains(milliseconds) else { return String(value) }
        let started = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        return "\(ISO8601DateFormatter().string(from: started)) #\(value & 0xFFFFF)"
    }

    /// A peer in a listing: a contact as `alias (8 hex…)` (its whole ID when `full`),
    /// anyone else by the whole ID.
    static func named(_ peer: PeerID, _ aliases: [String: String]?, full: Bool) -> String {
        let alias = aliases?[peer.hex]
        return peerName(peer, alias, short: !full && alias != nil)
    }

    /// `scmesh routes`: one row per destination, nearest first. The transport name
    /// comes from the node but is escaped like every other string.
    public static func routes(_ reply: RoutesReply, full: Bool = false) -> String {
        guard !reply.routes.isEmpty else { return "no routes (no peer reachable)" }
        var rows = [["DESTINATION", "NEXT HOP", "HOPS", "TRANSPORT", "AGE", "SEQUENCE"]]
        let ordered = reply.routes.sorted { ($0.hops, $0.destination) < ($1.hops, $1.destination) }
        for route in ordered {
            rows.append([
                named(route.destination, reply.aliases, full: full),
                route.nextHop == route.destination ? "direct" : named(route.nextHop, reply.aliases, full: full),
                String(route.hops), escaped(route.transport),
                duration(Double(route.ageMilliseconds) / 1000), route.sequence.map(sequence) ?? "-",
            ])
        }
        return table(rows)
    }

    /// `scmesh inbox`. A sender that is a contact reads `alias (8 hex…)`, with its
    /// whole ID when `full`; any other sender by its whole ID. Emergencies come first.
    public static func inbox(_ reply: InboxReply, full: Bool = false) -> String {
        guard !reply.messages.isEmpty else { return "inbox is empty" }
        let emergencies = reply.messages.filter { $0.emergency == true }
        let others = reply.messages.filter { $0.emergency != true }
        return (emergencies + others).map { inboxMessage($0, full: full) }.joined(separator: "\n")
    }

    /// One message of `scmesh inbox` (also each new one of `scmesh inbox --follow`).
    public static func inboxMessage(_ message: InboxReply.Message, full: Bool = false) -> String {
        let sender = peerName(message.from, message.alias, short: !full && message.alias != nil)
        let header =
            "#\(message.seq)  \(ISO8601DateFormatter().string(from: message.receivedAt))  from \(sender)  via \(escaped(message.transport))  \(message.bytes) bytes"
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

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    static func table(_ rows: [[String]]) -> String {
        let columns = rows.map(\.count).max() ?? 0
        let widths = (0..<columns).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { pad($0.element, widths[$0.offset]) }.joined(separator: "  ")
                .replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }.joined(separator: "\n")
    }
}
