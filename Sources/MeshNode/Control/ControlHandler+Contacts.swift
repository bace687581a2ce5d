import Foundation
import MeshCore
import MeshStore

extension ControlHandler {
    /// `contacts`, `contacts_add`, `contacts_remove`, `contacts_block`,
    /// `contacts_unblock`, `contacts_allow_only`, `contacts_rename`, `contacts_note`,
    /// `contacts_mute`, `contacts_unmute`: each replies with the whole contact
    /// book afterwards. Changes reach the inbound filter at once.
    package func contacts(_ request: ContactsRequest) async throws -> ContactsReply {
        let contacts = store.contacts
        var changed: String?
        switch request {
        case .list:
            break
        case .add(let alias, let peerText, let note):
            guard let alias else {
                throw MeshError(
                    .invalidArgument,
                    "contacts_add needs \"alias\" (the name to use) and \"peer\" (64 hex characters)"
                )
            }
            let prefixed = try await peerText.asyncFlatMap { try await resolvePeerPrefix($0, for: "contacts_add") }
            guard let text = peerText, let peer = PeerID(hex: text) ?? prefixed else {
                throw MeshError(
                    .invalidArgument,
                    "contacts_add needs \"peer\": the peer ID, 64 hex characters (`scmesh identity` on that node prints it), got \"\((peerText ?? "").prefix(80))\""
                )
            }
            try Self.requirePrintableAlias(alias)
            let current = try await contacts.contact(peer: peer)
            if let current, !current.alias.hasPrefix(Self.blockedAliasPrefix) {
                throw MeshError(
                    .invalidArgument,
                    "peer \(peer.hex) is already a contact, as \"\(current.alias)\"; to give it another alias, remove it (`scmesh contacts remove \(current.alias)`) and add it again"
                )
            }
            if var existing = current, existing.alias.hasPrefix(Self.blockedAliasPrefix) {
                // A peer blocked before it had a name keeps its blocked flag under the new alias.
                existing.alias = alias
                existing.note = note ?? existing.note
                try await contacts.save(existing)
            } else {
                try await contacts.add(peer: peer, alias: alias, note: note)
            }
            changed = "added \(alias.trimmingCharacters(in: .whitespacesAndNewlines)) = \(peer.hex)"
        case .remove(let name):
            guard let name else {
                throw MeshError(
                    .invalidArgument,
                    "contacts_remove needs \"alias\" (or \"peer\") of the contact to remove"
                )
            }
            let (peer, alias) = try await resolvePeer(name, for: "contacts_remove")
            guard try await contacts.remove(peer: peer) else {
                throw MeshError(.invalidArgument, "peer \(peer.hex) is not a contact; nothing to remove")
            }
            // The addresses its invitation gave are dialled no more.
            await router.forget(peer: peer)
            changed = "removed \(alias ?? peer.hex)"
        case .block(let name), .unblock(let name):
            let blocking = request == .block(peer: name)
            let (peer, alias) = try await resolvePeer(name, for: request.name)
            if alias == nil {
                guard blocking else {
                    throw MeshError(.invalidArgument, "peer \(peer.hex) is not a contact, so it is not blocked")
                }
                // Blocking a stranger: it becomes a contact under a placeholder alias
                // (the contact book is where the blocked flag lives).
                try await contacts.add(peer: peer, alias: Self.blockedAliasPrefix + peer.short)
            }
            if !blocking, let alias, alias.hasPrefix(Self.blockedAliasPrefix) {
                // The placeholder contact made by blocking a stranger goes with the block.
                try await contacts.remove(peer: peer)
            } else {
                try await contacts.setBlocked(blocking, peer: peer)
            }
            changed =
                "\(blocking ? "blocked" : "unblocked") \(alias ?? Self.blockedAliasPrefix + peer.short) (\(peer.hex))"
        case .mute(let name), .unmute(let name):
            let muting = request == .mute(peer: name)
            let (peer, alias) = try await resolvePeer(name, for: request.name)
            let named = alias.map { "\($0) (\(peer.hex))" } ?? peer.hex
            changed =
                try await contacts.setMuted(muting, peer: peer)
                ? "\(muting ? "muted" : "unmuted") \(named)"
                : "\(named) was \(muting ? "muted" : "not muted") already"
        case .allowOnly(let on):
            guard let on else {
                throw MeshError(
                    .invalidArgument,
                    "contacts_allow_only needs \"on\": true (accept messages only from contacts) or false"
                )
            }
            try await contacts.setAllowListOnly(on)
            changed =
                on ? "allow-list mode on: messages from peers that are not contacts are dropped" : "allow-list mode off"
        case .rename(let alias, let newAlias):
            changed = try await renameContact(alias, to: newAlias)
        case .note(let peer, let note):
            changed = try await noteContact(peer, note: note)
        }
        if changed != nil { try await contactFilter.reload() }
        let seen = await lastSeen()
        return ContactsReply(
            contacts: try await contacts.all().map { contact in
                var entry = ContactsReply.Entry(contact)
                entry.lastSeen = seen[contact.peer]
                return entry
            },
            allowOnly: try await contacts.allowListOnly(),
            dropped: contactFilter.counters,
            changed: changed,
            muted: try await contacts.mutedPeers().sorted { $0.hex < $1.hex }
        )
    }

    /// The alias a peer gets when it is blocked without being a contact.
    static let blockedAliasPrefix = "blocked-"

    /// Refuses an alias with control characters (ESC, newlines, ...) or bidirectional
    /// overrides: an alias is printed wherever its peer is, and must not rewrite the
    /// terminal or reorder the line around it.
    /// - Throws: `.invalidArgument` naming the first such character.
    static func requirePrintableAlias(_ alias: String) throws {
        let bidi: ClosedRange<UInt32> = 0x202A...0x202E
        let isolates: ClosedRange<UInt32> = 0x2066...0x2069
        if let bad = alias.unicodeScalars.first(where: {
            $0.properties.generalCategory == .control || bidi.contains($0.value) || isolates.contains($0.value)
        }) {
            throw MeshError(
                .invalidArgument,
                "an alias cannot hold control characters or direction overrides; \"\(TextReport.escaped(alias))\" has U+\(String(bad.value, radix: 16, uppercase: true))"
            )
        }
    }
}
