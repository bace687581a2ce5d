import Foundation
import MeshCore
import MeshStore

extension TextReport {
    /// `scmesh send`: one line with the message ID.
    public static func sent(_ reply: SendReply) -> String {
        let to = named(reply.peer, alias: reply.alias, full: true)
        let over = reply.transport.map { " over \(escaped($0))" } ?? ""
        switch reply.status {
        case .delivered where reply.waitedSeconds != nil:
            return
                "delivered message \(reply.messageID.hex) (\(reply.bytes) bytes) to \(to)\(over) in \(seconds(reply.waitedSeconds ?? 0))"
        case .delivered:
            return "message \(reply.messageID.hex) to \(to) was delivered already\(over); nothing sent again"
        case .sent:
            return
                "message \(reply.messageID.hex) to \(to) was sent already\(over) and waits for its receipt; nothing sent again"
        default:
            return "queued message \(reply.messageID.hex) (\(reply.bytes) bytes) for \(to)"
        }
    }

    /// `scmesh history`: BYTES is the payload's size (never a sealed envelope's).
    /// Peers and message IDs are named as in every listing; `full` prints them whole.
    public static func history(_ reply: HistoryReply, full: Bool = false) -> String {
        guard !reply.messages.isEmpty else { return "no messages in the history" }
        var rows = [["WHEN", "DIR", "PEER", "STATUS", "VIA", "BYTES", "ID", "REASON", "TEXT"]]
        for message in reply.messages {
            rows.append([
                timestamp(message.createdAt), message.direction == .outbound ? "to" : "from",
                named(message.peer, alias: message.alias, name: message.name, full: full),
                escaped(message.status.name) + (message.unread == true ? " (unread)" : ""),
                message.transport.map { escaped($0) } ?? "-", String(message.bytes), messageID(message.id, full: full),
                message.reason.map { escaped($0) } ?? "",
                snippet(message.text, headBase64: message.headBase64, bytes: message.bytes),
            ])
        }
        // REASON only when some message has one: the row is narrower without it.
        if reply.messages.allSatisfy({ $0.reason == nil }) {
            rows = rows.map { row in row.enumerated().filter { $0.offset != 7 }.map(\.element) }
        }
        let counts = reply.outboundCounts.sorted { $0.key < $1.key }.map { "\($0.value) \(escaped($0.key))" }
        return table(rows, freeText: rows[0].count == 9 ? [7, 8] : [7])
            + (counts.isEmpty ? "" : "\nsent by this node: " + counts.joined(separator: ", "))
    }

    /// `scmesh history --trace ID`.
    public static func trace(_ reply: TraceReply) -> String {
        let message = reply.message
        var lines = [
            "message     \(message.id.hex)",
            (message.direction == .outbound ? "to          " : "from        ")
                + named(message.peer, alias: message.alias, name: message.name, full: true)
                + (reply.peerConnected ? "  (a link is up now)" : "  (no link now)"),
            "status      \(escaped(message.status.name))\(message.reason.map { ": \(escaped($0))" } ?? "")",
            "bytes       \(message.bytes) (the payload; a sealed envelope's size is in the trace)",
            "attempts    \(message.attempts)",
        ]
        if let expires = message.expiresAt, !message.status.isFinal {
            lines.append("expires     \(timestamp(expires))")
        }
        lines.append("trace")
        for event in reply.trace {
            var text = "  \(timestamp(event.at))  \(escaped(event.kind.name))"
            if let attempt = event.attempt { text += " #\(attempt)" }
            if let status = event.status, event.kind.name != "attempt" { text += " → \(escaped(status.name))" }
            if let transport = event.transport { text += " via \(escaped(transport))" }
            if let reason = event.reason { text += ": \(escaped(reason))" }
            lines.append(text)
        }
        return lines.joined(separator: "\n")
    }

    /// `scmesh outbox`: BYTES and the total are payload sizes (never a sealed
    /// envelope's). Peers and message IDs are named as in every listing; `full`
    /// prints them whole.
    public static func outbox(_ reply: OutboxReply, full: Bool = false) -> String {
        guard !reply.messages.isEmpty else {
            return "outbox is empty: every message sent was delivered, failed or expired"
        }
        var rows = [["SINCE", "PEER", "STATUS", "TRIES", "BYTES", "EXPIRES", "ID", "WAITING FOR"]]
        for message in reply.messages {
            rows.append([
                timestamp(message.createdAt), named(message.peer, alias: message.alias, name: message.name, full: full),
                escaped(message.status.name), String(message.attempts), String(message.bytes),
                message.expiresAt.map { "in " + duration(max(0, $0.timeIntervalSinceNow)) } ?? "-",
                messageID(message.id, full: full),
                message.waitingFor.map { escaped($0) } ?? "",
            ])
        }
        let shown = reply.messages.count < reply.total ? " (\(reply.messages.count) shown)" : ""
        return table(rows, freeText: [7])
            + "\n\(reply.total) message\(reply.total == 1 ? "" : "s") on the way, \(reply.totalBytes) payload bytes\(shown)"
    }

    /// `scmesh contacts`.
    public static func contacts(_ reply: ContactsReply, full: Bool = false) -> String {
        var lines: [String] = []
        if let changed = reply.changed { lines.append(escaped(changed)) }
        if reply.contacts.isEmpty {
            lines.append("no contacts")
        } else {
            var rows = [["ALIAS", "PEER", "BLOCKED", "MUTED", "LAST SEEN", "NOTE"]]
            for contact in reply.contacts {
                rows.append([
                    escaped(contact.alias), full ? contact.peer.hex : contact.peer.short + "…",
                    contact.blocked ? "blocked" : "",
                    reply.muted.contains(contact.peer) ? "muted" : "",
                    contact.lastSeen.map(timestamp) ?? "never",
                    contact.note.map { escaped($0) } ?? "",
                ])
            }
            lines.append(table(rows, freeText: [5]))
        }
        let contacts = Set(reply.contacts.map(\.peer))
        let strangers = reply.muted.filter { !contacts.contains($0) }
        if !strangers.isEmpty {
            let names = strangers.map { named($0, alias: nil, full: full) }
            lines.append("muted, not contacts: " + names.joined(separator: ", "))
        }
        lines.append("allow-list mode \(reply.allowOnly ? "on: only contacts' messages are accepted" : "off")")
        let dropped = reply.dropped.sorted { $0.key < $1.key }.map { "\(escaped($0.key)) \($0.value)" }
        if !dropped.isEmpty { lines.append("dropped since start: " + dropped.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: date)
    }

    static func seconds(_ value: Double) -> String {
        value < 10 ? String(format: "%.2f s", value) : String(format: "%.1f s", value)
    }
}
