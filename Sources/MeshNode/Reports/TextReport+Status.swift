import Foundation
import MeshCore

extension TextReport {
    /// `scmesh status`: one screen, the important things first (like `tailscale
    /// status` or `rnstatus`): who the node is and whether it works (relay, peers,
    /// queues), then each transport with its state and the addresses it actually
    /// listens on, preferred first, then the counters.
    ///
    /// ```
    /// alice  489f48a6…dbae
    /// relay on · 1 peer · network poor · inbox 0 · outbox 0 · up 2m 3s
    ///
    /// TRANSPORT  STATE    PRIORITY  LISTENING ON
    /// tcp        running  30        127.0.0.1:7420
    /// ```
    public static func status(_ status: StatusReply) -> String {
        let name = status.name.map { escaped($0) } ?? "(no name)"
        let quality = status.networkQuality.map { " · network \(escaped($0))" } ?? ""
        let peers = "\(status.peerCount) peer\(status.peerCount == 1 ? "" : "s")\(quality)"
        let outbox = status.outboxCount.map { "outbox \($0)" } ?? "outbox -"
        let relay = status.relayEnabled ? "relay on" : "RELAY OFF (the node neither sends nor receives)"
        let inbox = "inbox \(status.inboxCount)" + (status.unread.flatMap { $0 > 0 ? " (\($0) unread)" : nil } ?? "")
        var lines = [
            "\(name)  \(status.peerID.hex)",
            [relay, peers, inbox, outbox, "up \(duration(status.uptimeSeconds))"].joined(separator: " · "),
            "",
        ]
        if status.transports.isEmpty {
            lines.append("no transports")
        } else {
            var rows = [["TRANSPORT", "STATE", "PRIORITY", "LISTENING ON"]]
            for transport in status.transports.sorted(by: { ($0.priority, $0.name) < ($1.priority, $1.name) }) {
                let detail =
                    transport.reason.map { escaped($0) }
                    ?? (transport.addresses.isEmpty
                        ? "-" : transport.addresses.map { escaped($0) }.joined(separator: ", "))
                rows.append([
                    escaped(transport.name), escaped(transport.state.name), String(transport.priority), detail,
                ])
            }
            lines.append(table(rows))
        }
        if let line = http(status) { lines += ["", line] }
        let stats = status.stats
        lines += [
            "",
            "messages    \(stats.messagesSent) sent, \(stats.messagesReceived) received, \(stats.duplicatesDropped) duplicates dropped",
            "links       \(stats.linksOpened) opened, \(stats.linksClosed) closed, \(stats.handshakeFailures) failed handshakes",
            "escalation  \(stats.escalations) escalations, \(stats.deEscalations) returns, \(stats.retries) retries, \(stats.ackTimeouts) ack timeouts",
        ]
        if let features = status.features {
            let off = Capabilities.named.map(\.name).filter { !features.contains($0) }
            let version = status.wireVersion.map { "wire version \($0) · " } ?? ""
            let on = features.isEmpty ? "none (minimal profile)" : features.joined(separator: ", ")
            lines.append(
                "protocol    \(version)features \(on)" + (off.isEmpty ? "" : "; off: \(off.joined(separator: ", "))")
            )
        }
        if !stats.framesIgnored.isEmpty {
            let list = stats.framesIgnored.sorted { $0.key < $1.key }.map { "\(escaped($0.key)) \($0.value)" }.joined(
                separator: ", "
            )
            lines.append("ignored     frames: \(list)")
        }
        if !stats.framesWithheld.isEmpty {
            let list = stats.framesWithheld.sorted { $0.key < $1.key }.map { "\(escaped($0.key)) \($0.value)" }.joined(
                separator: ", "
            )
            lines.append("withheld    frames: \(list) (peers without the feature)")
        }
        let router = routerRefusals(stats)
        if !router.isEmpty {
            let list = router.sorted { $0.key < $1.key }.map { "\(escaped($0.key)) \($0.value)" }.joined(
                separator: ", "
            )
            lines.append("refused     router: \(list)")
        }
        for (name, counters) in (status.transportCounters ?? [:]).sorted(by: { $0.key < $1.key })
        where !counters.isEmpty {
            let list = counters.sorted { $0.key < $1.key }.map { "\(escaped($0.key)) \($0.value)" }.joined(
                separator: ", "
            )
            lines.append("refused     \(escaped(name)): \(list)")
        }
        lines.append("data dir    \(escaped(status.dataDir))")
        return lines.joined(separator: "\n")
    }

    /// Where the HTTP API (and the dashboard) is, or why there is none; nil for an
    /// older node that does not say.
    static func http(_ status: StatusReply) -> String? {
        if let address = status.httpAddress {
            let note = status.httpNote.map { " (\(escaped($0)))" } ?? ""
            return "http        http://\(escaped(address))/ (API and `scmesh dashboard`)\(note)"
        }
        if let problem = status.httpProblem { return "http        none: \(escaped(problem))" }
        switch status.httpEnabled {
        case false?: return "http        off (http.enabled: false)"
        case true?: return "http        starting"
        case nil: return nil
        }
    }
}
