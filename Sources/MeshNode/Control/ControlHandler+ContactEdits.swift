import Foundation
import MeshCore
import MeshStore

extension ControlHandler {
    /// `contacts_rename`: gives a contact another alias; returns the `changed` line.
    /// - Throws: one line naming what is wrong (no such contact, the new alias taken or
    ///   malformed).
    func renameContact(_ name: String?, to newAlias: String?) async throws -> String {
        guard let name, !name.isEmpty, let newAlias, !newAlias.isEmpty else {
            throw MeshError(
                .invalidArgument,
                "contacts_rename needs \"alias\" (the contact's alias now, or its peer ID) and \"new_alias\""
            )
        }
        try Self.requirePrintableAlias(newAlias)
        let (peer, alias) = try await resolvePeer(name, for: "contacts_rename")
        guard let alias, var contact = try await store.contacts.contact(peer: peer) else {
            throw MeshError(
                .invalidArgument,
                "peer \(peer.hex) is not a contact; add it with scmesh contacts add ALIAS PEER"
            )
        }
        contact.alias = newAlias
        try await store.contacts.save(contact)
        return "renamed \(alias) to \(newAlias.trimmingCharacters(in: .whitespacesAndNewlines)) (\(peer.hex))"
    }

    /// `contacts_note`: sets a contact's note (an empty one removes it); returns the
    /// `changed` line.
    /// - Throws: one line naming what is wrong (no such contact, no note given).
    func noteContact(_ name: String?, note: String?) async throws -> String {
        guard let note else {
            throw MeshError(
                .invalidArgument,
                "contacts_note needs \"peer\" (an alias or peer ID) and \"note\" (empty to remove it)"
            )
        }
        guard note.utf8.count <= Self.maximumNoteBytes else {
            throw MeshError(
                .invalidArgument,
                "a note holds at most \(Self.maximumNoteBytes) bytes, got \(note.utf8.count)"
            )
        }
        let (peer, alias) = try await resolvePeer(name, for: "contacts_note")
        guard let alias, var contact = try await store.contacts.contact(peer: peer) else {
            throw MeshError(
                .invalidArgument,
                "peer \(peer.hex) is not a contact; add it with scmesh contacts add ALIAS PEER"
            )
        }
        contact.note = note.isEmpty ? nil : note
        try await store.contacts.save(contact)
        return note.isEmpty ? "removed the note of \(alias)" : "noted \(alias): \(note)"
    }

    /// The longest note a contact keeps.
    static let maximumNoteBytes = 4_096

    /// When each peer was last seen: now for a peer with a live link, else the last
    /// time a link to one of its addresses came up (the address ledger).
    func lastSeen() async -> [PeerID: Date] {
        var seen: [PeerID: Date] = [:]
        if let entries = try? await store.ledger.all() {
            for entry in entries {
                guard let success = entry.lastSuccess else { continue }
                seen[entry.peer] = max(seen[entry.peer] ?? success, success)
            }
        }
        let now = Date()
        for peer in await router.peers() { seen[peer.peer] = now }
        return seen
    }
}
