import ArgumentParser
import Foundation
import MeshCore
import MeshNode

/// `scmesh invite`.
struct InviteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Print a signed invitation to this node, as a link and a QR code, for `scmesh join` on another node.",
        discussion: """
            The invitation holds this node's peer ID, its name (node.name), the addresses its \
            TCP transports listen on and an expiry, signed with the node's identity key. \
            Anyone holding it can connect to this node until it expires.
            """
    )

    @OptionGroup var node: NodeOptions

    @Option(
        help: ArgumentHelp(
            "How long the invitation is valid: 90s, 30m, 24h, 7d (60 s to 30 days).",
            valueName: "duration"
        )
    )
    var expires = "24h"

    @Option(
        help: ArgumentHelp(
            "Revoke the invitation with this ID (or its unique start; scmesh invites lists them) instead: a later join by it is ignored.",
            valueName: "id"
        )
    )
    var revoke: String?

    func run() async throws {
        if let revoke {
            return try await node.call(.revokeInvite(id: revoke), as: InvitesReply.self, render: TextReport.invites)
        }
        try await reportingErrors(json: node.json) {
            let seconds = try DurationArgument.seconds(expires, option: "--expires")
            let colors = isatty(STDOUT_FILENO) == 1
            try await node.call(
                .invite(expiresSeconds: seconds),
                as: InviteReply.self,
                render: { TextReport.invite($0, colors: colors) }
            )
        }
    }
}

/// `scmesh join`.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Check an invitation from `scmesh invite`, add its node as a contact and dial it.",
        discussion: """
            Refused when the invitation expired, was changed after signing, does not parse, \
            or is this node's own.
            """
    )

    @OptionGroup var node: NodeOptions

    @Option(help: "The alias for the new contact (default: the name in the invitation, else peer-<8 hex>).")
    var alias: String?

    @Argument(help: "The invitation: the scmesh:… link.")
    var invitation: String

    func run() async throws {
        try await node.call(
            .join(JoinRequest(invitation: invitation, alias: alias)),
            as: JoinReply.self,
            render: TextReport.joined
        )
    }
}

/// `scmesh invites`.
struct InvitesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invites",
        abstract: "List the invitations this node issued, their expiry, and who joined by each.",
        discussion: """
            A node that joins by an invitation tells the inviter over the new link; the inviter \
            then adds it as a contact (alias: its node.name, else peer-<8 hex>) and lists it here. \
            scmesh invite --revoke ID makes later joins by an invitation be ignored.
            """
    )

    @OptionGroup var node: NodeOptions

    func run() async throws {
        try await node.call(.invites, as: InvitesReply.self, render: TextReport.invites)
    }
}
