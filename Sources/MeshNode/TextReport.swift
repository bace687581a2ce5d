import Foundation
import MeshCore

/// Human-readable renderings of control replies, as `scmesh` prints them without `--json`.
public enum TextReport {
    /// `scmesh status`.
    public static func status(_ status: StatusReply) -> String {
        var lines = [
            "peer id     \(status.peerID.hex)",
            "name        \(status.name ?? "-")",
            "data dir    \(status.dataDir)",
            "uptime      \(duration(status.uptimeSeconds))",
            "relay       \(status.relayEnabled ? "on" : "off (the node neither sends nor receives)")",
            status.transports.isEmpty ? "transports  none" : "transports",
        ]
        let width = status.transports.map(\.name.count).max() ?? 0
        for transport in status.transports {
            var state = transport.state.name
            if let reason = transport.reason { state += ": \(reason)" }
            lines.append("  \(pad(transport.name, width))  priority \(pad(String(transport.priority), 3))  \(state)")
        }
        let stats = status.stats
        lines += [
            "peers       \(status.peerCount)",
            "inbox       \(status.inboxCount) message\(status.inboxCount == 1 ? "" : "s")",
            "messages    \(stats.messagesSent) sent, \(stats.messagesReceived) received, \(stats.duplicatesDropped) duplicates dropped",
            "links       \(stats.linksOpened) opened, \(stats.linksClosed) closed, \(stats.handshakeFailures) failed handshakes",
            "escalation  \(stats.escalations) escalations, \(stats.deEscalations) returns, \(stats.retries) retries, \(stats.ackTimeouts) ack timeouts",
        ]
        return lines.joined(separator: "\n")
    }

    /// `scmesh peers`.
    public static func peers(_ reply: PeersReply) -> String {
        guard !reply.peers.isEmpty else { return "no peers with a live link" }
        var rows = [["PEER", "TRANSPORT", "PRIORITY", "ADDRESS", "RTT", "IN FLIGHT", ""]]
        for peer in reply.peers {
            for (index, link) in peer.links.enumerated() {
                rows.append([
                    index == 0 ? peer.peer.hex : "",
                    link.transport, String(link.priority), link.address,
                    link.rttMilliseconds.map { String(format: "%.1f ms", $0) } ?? "-",
                    String(link.inFlight),
                    link.transport == peer.activeTransport ? "active" : "",
                ])
            }
            if peer.links.isEmpty { rows.append([peer.peer.hex, "-", "-", "-", "-", "-", ""]) }
        }
        return table(rows)
    }

    /// `scmesh inbox`.
    public static func inbox(_ reply: InboxReply) -> String {
        guard !reply.messages.isEmpty else { return "inbox is empty" }
        let formatter = ISO8601DateFormatter()
        return reply.messages.map { message in
            let header =
                "#\(message.seq)  \(formatter.string(from: message.receivedAt))  from \(message.from.hex)  via \(message.transport)  \(message.bytes) bytes"
            let body = message.text.map { "    " + $0.replacingOccurrences(of: "\n", with: "\n    ") }
                ?? "    (binary, base64) \(message.payloadBase64.prefix(76))\(message.payloadBase64.count > 76 ? "…" : "")"
            return header + "\n" + body
        }.joined(separator: "\n")
    }

    /// `scmesh send`.
    public static func sent(_ reply: SendReply) -> String {
        "sent message \(reply.messageID.hex) (\(reply.bytes) bytes) to \(reply.peer.hex)"
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
