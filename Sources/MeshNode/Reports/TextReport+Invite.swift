import Foundation
import MeshCore

extension TextReport {
    /// `scmesh invite`: the QR code (when the link fits one), the link, and what the
    /// invitation holds.
    /// - Parameter colors: draw the QR code black on white with ANSI colours (for a
    ///   terminal).
    public static func invite(_ reply: InviteReply, colors: Bool) -> String {
        var lines: [String] = []
        if let code = try? QRCode.encode(Array(reply.link.utf8), errorCorrection: .medium) {
            lines.append(code.terminalText(quietZone: 2, colors: colors))
            lines.append("")
        }
        lines.append(reply.link)
        lines.append("")
        lines.append("invitation to \(reply.name.map { escaped($0) + " " } ?? "")(\(reply.peer.hex))")
        lines.append("expires     \(ISO8601DateFormatter().string(from: reply.expiresAt))")
        lines.append(
            "addresses   \(reply.addresses.isEmpty ? "none" : reply.addresses.map { escaped($0) }.joined(separator: ", "))"
        )
        if let warning = reply.warning { lines.append("warning     \(escaped(warning))") }
        lines.append("on the other node: scmesh join \(reply.link)")
        return lines.joined(separator: "\n")
    }

    /// `scmesh join`.
    public static func joined(_ reply: JoinReply) -> String {
        var lines = [
            "\(reply.contactAdded ? "added contact" : "already a contact:") \(escaped(reply.alias)) = \(reply.peer.hex)"
        ]
        if reply.dialling.isEmpty {
            lines.append("no address to dial: the link comes up once discovery (mDNS, BLE) or a route finds the node")
        } else {
            lines.append(
                "dialling    \(reply.dialling.map { escaped($0) }.joined(separator: ", ")) (`scmesh peers` shows the link)"
            )
        }
        for entry in reply.notDialled { lines.append("not dialled \(escaped(entry))") }
        return lines.joined(separator: "\n")
    }

    /// `scmesh invites` (and `scmesh invite --revoke`): one line per invitation, then
    /// one per node that joined by it.
    public static func invites(_ reply: InvitesReply) -> String {
        var lines: [String] = []
        if let changed = reply.changed { lines.append(escaped(changed)) }
        guard !reply.invitations.isEmpty else { return (lines + ["no invitations issued"]).joined(separator: "\n") }
        for invitation in reply.invitations {
            let state = invitation.revoked ? "revoked" : invitation.expired ? "expired" : "valid"
            lines.append(
                "\(invitation.id)  issued \(timestamp(invitation.issuedAt))  expires \(timestamp(invitation.expiresAt))  \(state)  \(invitation.joined.count) joined"
            )
            for joiner in invitation.joined {
                lines.append(
                    "    \(named(joiner.peer, alias: joiner.alias, full: false))  joined \(timestamp(joiner.joinedAt))"
                )
            }
        }
        return lines.joined(separator: "\n")
    }
}
