import Synchronization

/// The names peers claim for themselves in the link handshake (`node.name`, carried
/// in the identity proof's extension area, docs/PROTOCOL.md §B.2.1), and the rules a
/// name must meet.
///
/// A heard name is authenticated as coming from the peer key that proved itself on
/// the link, but it is self-chosen and not unique: two peers may claim the same name.
/// It is a claim, not an identity; listings mark it so (docs/cli.md).
public final class PeerNames: Sendable {
    /// The most UTF-8 bytes a name has on the wire (as in an invitation).
    public static let maximumBytes = 64
    /// The most peers whose names are kept; a new one past it replaces an arbitrary one.
    public static let maximumPeers = 4_096

    private struct State {
        var names: [PeerID: String] = [:]
        /// The peers that completed a handshake in this run (whose name, or lack of
        /// one, is current), at most ``PeerNames/maximumPeers``.
        var heard: Set<PeerID> = []
    }

    private let state = Mutex(State())

    /// Creates an empty table.
    public init() {}

    /// `bytes` as a name when it is one: valid UTF-8, 1 to ``maximumBytes`` bytes, not
    /// only white space, and without a character that a terminal would act on (C0 and
    /// C1 controls, tab, DEL, the bidirectional marks and overrides). Nil otherwise.
    public static func validated(_ bytes: some Collection<UInt8>) -> String? {
        guard !bytes.isEmpty, bytes.count <= maximumBytes,
            let name = String(validating: bytes, as: UTF8.self),
            !name.unicodeScalars.contains(where: { $0 == "\t" || TerminalText.needsEscape($0) }),
            name.unicodeScalars.contains(where: { !$0.properties.isWhitespace })
        else { return nil }
        return name
    }

    /// The name a node announces for its configured `name`: cut at a character
    /// boundary to ``maximumBytes`` bytes, or nil when it is empty or holds a
    /// character that ``validated(_:)`` refuses.
    public static func announceable(_ name: String?) -> String? {
        guard let name else { return nil }
        var cut = ""
        for character in name {
            guard cut.utf8.count + character.utf8.count <= maximumBytes else { break }
            cut.append(character)
        }
        return validated(Array(cut.utf8))
    }

    /// The last name `peer` claimed, if it claimed one in its last handshake.
    public func name(of peer: PeerID) -> String? {
        state.withLock { $0.names[peer] }
    }

    /// Every peer's last claimed name.
    public var all: [PeerID: String] { state.withLock { $0.names } }

    /// Adds names kept from an earlier run (the node's store) for the peers that have
    /// not completed a handshake in this run; names that ``validated(_:)`` refuses are
    /// left out, and the table stays within ``maximumPeers``.
    public func restore(_ kept: [PeerID: String]) {
        state.withLock { state in
            for (peer, name) in kept where !state.heard.contains(peer) && state.names[peer] == nil {
                guard state.names.count < Self.maximumPeers else { return }
                if let valid = Self.validated(Array(name.utf8)) { state.names[peer] = valid }
            }
        }
    }

    /// Records what `peer` claimed in a handshake: a name replaces the one held; none
    /// forgets it (the peer withdrew its name, or runs a release that sends none).
    public func heard(_ name: String?, from peer: PeerID) {
        state.withLock { state in
            if state.heard.count < Self.maximumPeers { state.heard.insert(peer) }
            guard let name else {
                state.names[peer] = nil
                return
            }
            if state.names[peer] == nil, state.names.count >= Self.maximumPeers, let victim = state.names.keys.first {
                state.names[victim] = nil
            }
            state.names[peer] = name
        }
    }
}
