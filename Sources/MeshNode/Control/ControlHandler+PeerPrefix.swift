import MeshCore
import MeshStore

extension ControlHandler {
    /// The fewest hex characters a peer ID prefix must have to be accepted.
    static let minimumPeerPrefix = 4

    /// A peer named by the start of its peer ID (4 to 63 hex characters, any case),
    /// among the peers this node knows: contacts, peers with a link, route
    /// destinations, the address ledger's peers and the peers of its history (a
    /// stranger who wrote, listed by the start of its ID).
    /// - Returns: the one peer whose ID starts with `text`, or nil when `text` is not
    ///   such a prefix or no known peer matches.
    /// - Throws: `.invalidArgument` when several known peers match, listing them.
    func resolvePeerPrefix(_ text: String, for command: String) async throws -> PeerID? {
        let prefix = text.lowercased()
        guard prefix.count >= Self.minimumPeerPrefix, prefix.count < 64, prefix.allSatisfy(\.isHexDigit) else {
            return nil
        }
        var known: Set<PeerID> = []
        for contact in try await store.contacts.all() { known.insert(contact.peer) }
        for peer in await router.peers() { known.insert(peer.peer) }
        for route in await router.routes() { known.insert(route.destination) }
        for entry in (try? await store.ledger.all()) ?? [] { known.insert(entry.peer) }
        for peer in (try? await store.history.peers(startingWith: prefix)) ?? [] { known.insert(peer) }
        let matches = known.filter { $0.hex.hasPrefix(prefix) }.sorted { $0.hex < $1.hex }
        guard matches.count <= 1 else {
            let listed = matches.prefix(5).map(\.hex).joined(separator: ", ")
            throw MeshError(
                .invalidArgument,
                "\(command): \"\(prefix)\" is the start of \(matches.count) known peer IDs (\(listed)\(matches.count > 5 ? ", ..." : "")); give more characters"
            )
        }
        return matches.first
    }
}

extension Optional {
    /// `flatMap` with an async transform.
    func asyncFlatMap<Result>(_ transform: (Wrapped) async throws -> Result?) async rethrows -> Result? {
        guard let value = self else { return nil }
        return try await transform(value)
    }
}
