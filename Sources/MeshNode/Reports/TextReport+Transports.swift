import Foundation
import MeshCore

extension TextReport {
    /// `scmesh transports`: each transport with its state and where it listens.
    public static func transports(_ reply: TransportsReply) -> String {
        var lines: [String] = []
        if let changed = reply.changed { lines.append(escaped(changed)) }
        guard !reply.transports.isEmpty else {
            lines.append("no transports")
            return lines.joined(separator: "\n")
        }
        var rows = [["TRANSPORT", "STATE", "PRIORITY", "LISTENING ON"]]
        for transport in reply.transports.sorted(by: { ($0.priority, $0.name) < ($1.priority, $1.name) }) {
            let detail =
                transport.reason.map { escaped($0) }
                ?? (transport.addresses.isEmpty ? "-" : transport.addresses.map { escaped($0) }.joined(separator: ", "))
            rows.append([escaped(transport.name), escaped(transport.state.name), String(transport.priority), detail])
        }
        lines.append(table(rows))
        if !reply.disabled.isEmpty {
            let names = reply.disabled.map { escaped($0) }.joined(separator: ", ")
            lines.append("disabled at run time (kept across restarts): \(names); scmesh transports enable NAME")
        }
        return lines.joined(separator: "\n")
    }

    /// `scmesh dial`: the peer whose link came up.
    public static func dial(_ reply: DialReply) -> String {
        "linked to \(named(reply.peer, alias: reply.alias, name: reply.name, full: true)) over \(escaped(reply.transport)) at \(escaped(reply.address))"
    }

    /// `scmesh peers --known`: the address ledger.
    public static func knownPeers(_ reply: KnownPeersReply, full: Bool = false) -> String {
        guard !reply.known.isEmpty else { return "no known peers (the address ledger is empty)" }
        var rows = [["PEER", "TRANSPORT", "ADDRESS", "OK", "FAILED", "LAST SEEN", "LINKED"]]
        for entry in reply.known {
            rows.append([
                named(entry.peer, alias: entry.alias, name: entry.name, full: full), escaped(entry.transport),
                escaped(entry.address),
                String(entry.successes), String(entry.failures), timestamp(entry.lastSeen),
                entry.connected ? "yes" : "",
            ])
        }
        return table(rows, freeText: [2])
    }
}
