import Foundation
import MeshCore

extension TextReport {
    /// One event as `scmesh events` prints it: `#id time kind fields…` (control
    /// characters in remote data escaped). The peer is named as every listing names
    /// one (`aliases`: the contacts' aliases by peer; `names`: the names strangers
    /// claimed), and so is the message ID;
    /// `full` prints both whole.
    public static func event(
        _ event: NodeEvent,
        aliases: [PeerID: String] = [:],
        names: [PeerID: String] = [:],
        full: Bool = false
    ) -> String {
        let fields = event.event
        var parts = [escaped(fields.kind.name)]
        if let transport = fields.transport { parts.append("transport=\(escaped(transport))") }
        if let peer = fields.peer {
            parts.append("peer=\(named(peer, alias: aliases[peer], name: names[peer], full: full))")
        }
        if let link = fields.link { parts.append(escaped("\(link)")) }
        if let address = fields.address { parts.append("address=\(escaped(address))") }
        if let from = fields.from, let to = fields.to { parts.append("\(escaped(from)) -> \(escaped(to))") }
        if let id = fields.messageID { parts.append("message=\(messageID(id, full: full))") }
        if let reason = fields.reason { parts.append("reason: \(escaped(reason))") }
        return "#\(event.id)  \(timestamp(event.time))  \(parts.joined(separator: " "))"
    }
}
