import Foundation
import MeshCore
import MeshCrypto
import MeshStore
import TransportMDNS
import TransportTCP

extension ControlHandler {
    /// How long an invitation is valid when the request names no time: 24 hours.
    static let defaultInvitationSeconds: Double = 86_400
    /// The longest validity `invite` accepts: 30 days.
    static let maximumInvitationSeconds: Double = 30 * 86_400
    /// The transport kind of the addresses TCP-based transports (tcp, mdns) listen on.
    static let tcpKind = "tcp"

    /// `invite`: a signed invitation to this node (peer ID, `node.name`, the addresses
    /// its transports listen on, an expiry `expires_seconds` from now, default 24 h).
    package func invite(expiresSeconds: Double? = nil) async throws -> InviteReply {
        guard let signer = inviter else {
            throw MeshError(
                .controlRequestFailed,
                "this node's identity has no Ed25519 key to sign an invitation with (it was built with a test identity)"
            )
        }
        let seconds = expiresSeconds ?? Self.defaultInvitationSeconds
        guard seconds.isFinite, seconds >= 60, seconds <= Self.maximumInvitationSeconds else {
            throw MeshError(
                .invalidArgument,
                "an invitation is valid for 60 s to 30 days (\"expires_seconds\" 60 to 2592000), got \(seconds)"
            )
        }
        let expiry = Date().addingTimeInterval(seconds)
        let addresses = Array(listeningAddresses().prefix(Invitation.maximumAddresses))
        var name = configuration.node.name
        if let full = name, full.utf8.count > Invitation.maximumNameBytes {
            // Cut at a character boundary.
            var cut = ""
            for character in full where cut.utf8.count + String(character).utf8.count <= Invitation.maximumNameBytes {
                cut.append(character)
            }
            name = cut
        }
        // Ed25519 signatures are deterministic: two invitations made in the same second
        // would be one, with one ID. Each later one expires a second later instead.
        var expiresAt = UInt32(clamping: Int64(expiry.timeIntervalSince1970))
        var invitation: Invitation
        var id: String
        repeat {
            invitation = try Invitation.signed(by: signer, name: name, addresses: addresses, expiresAt: expiresAt)
            id = IssuedInvitations.id(signature: invitation.signature)
            expiresAt += 1
        } while try await !store.invitations.record(
            id: id,
            expiresAt: Date(timeIntervalSince1970: TimeInterval(invitation.expiresAt))
        )
        let warning =
            addresses.isEmpty
            ? "no transport of this node listens on a TCP address, so the invitation lists none: the joiner adds the contact but can only find this node by discovery (mDNS, BLE) or a route"
            : nil
        var reply = InviteReply(
            link: invitation.link,
            peer: router.localPeerID,
            name: invitation.name,
            addresses: addresses.map { "\($0.transport) \($0.address)" },
            expiresAt: Date(timeIntervalSince1970: TimeInterval(invitation.expiresAt)),
            warning: warning
        )
        reply.id = id
        return reply
    }

    /// Where the node's TCP-based transports listen, wildcards expanded to the
    /// interfaces' addresses, without duplicates.
    func listeningAddresses() -> [Invitation.Address] {
        let interfaces = InterfaceAddresses.current()
        var seen: Set<String> = []
        var result: [Invitation.Address] = []
        for transport in transports {
            let bound: [String]
            switch transport {
            case let tcp as TCPTransport: bound = tcp.boundAddresses
            case let mdns as MDNSTransport: bound = mdns.boundAddresses
            default: continue
            }
            for address in bound.flatMap({ InterfaceAddresses.dialable(bound: $0, interfaces: interfaces) })
            where seen.insert(address).inserted {
                result.append(Invitation.Address(transport: Self.tcpKind, address: address))
            }
        }
        return result
    }

    /// `join`: checks an invitation (format, signature, expiry, not this node's own),
    /// adds its node as a contact (`alias`, else its name, else `peer-<8 hex>`), and
    /// dials its addresses through this node's TCP transport.
    package func join(_ request: JoinRequest) async throws -> JoinReply {
        guard let text = request.invitation, !text.isEmpty else {
            throw MeshError(
                .invalidArgument,
                "join needs \"invitation\": the scmesh:… link that `scmesh invite` printed"
            )
        }
        let invitation = try Invitation(link: text)
        try invitation.verify(now: Int64(Date().timeIntervalSince1970))
        let peer = invitation.peerID
        guard peer != router.localPeerID else {
            throw MeshError(
                .invalidArgument,
                "this is this node's own invitation; run `scmesh join` with it on the node that should connect to this one"
            )
        }
        let contacts = store.contacts
        var alias: String
        let added: Bool
        if let existing = try await contacts.contact(peer: peer) {
            alias = existing.alias
            added = false
        } else {
            let note = "joined by invitation"
            if let chosen = request.alias {
                try await contacts.add(peer: peer, alias: chosen, note: note)
                alias = chosen
            } else {
                alias = Self.placeholderAlias(peer)
                if let name = invitation.name, (try? await contacts.contact(alias: name)) == nil,
                    (try? await contacts.add(peer: peer, alias: name, note: note)) != nil
                {
                    alias = name
                } else {
                    try await contacts.add(peer: peer, alias: alias, note: note)
                }
            }
            added = true
            try await contactFilter.reload()
        }
        alias = alias.trimmingCharacters(in: .whitespacesAndNewlines)
        var dialling: [String] = []
        var notDialled: [String] = []
        let local = transports.first { $0 is TCPTransport } ?? transports.first { $0 is MDNSTransport }
        for address in invitation.addresses {
            guard address.transport == Self.tcpKind else {
                notDialled.append("\(address.transport) \(address.address): this node has no transport of that kind")
                continue
            }
            guard let local else {
                notDialled.append(
                    "\(address.transport) \(address.address): this node runs no TCP transport (transports.tcp)"
                )
                continue
            }
            let listening = await router.transportStatus().first { $0.name == local.name }?.addresses ?? []
            guard AddressFamily.admits(address.address, listeningOn: listening) else {
                notDialled.append(
                    "\(address.transport) \(TextReport.escaped(address.address)): not an IP address of a family \(local.name) listens on (\(listening.joined(separator: ", ")))"
                )
                continue
            }
            await router.connect(
                to: PeerHint(transport: local.name, address: address.address, peerID: peer),
                maxFailures: Router.requestedDialFailureLimit
            )
            dialling.append("\(local.name) \(address.address)")
        }
        // The inviter hears who joined: one message, queued until a link is up.
        _ = try await router.send(
            to: peer,
            payload: InvitationAcceptance.payload(
                invitationID: IssuedInvitations.id(signature: invitation.signature),
                name: configuration.node.name
            )
        )
        return JoinReply(
            peer: peer,
            alias: alias,
            name: invitation.name,
            contactAdded: added,
            dialling: dialling,
            notDialled: notDialled,
            expiresAt: Date(timeIntervalSince1970: TimeInterval(invitation.expiresAt))
        )
    }

    /// The alias of a joined node whose name is missing or taken: `peer-<8 hex>`.
    static func placeholderAlias(_ peer: PeerID) -> String {
        "peer-" + peer.short
    }
}
