import DequeModule
import Synchronization

/// What this node knows of other nodes' sealed-envelope formats (docs/PROTOCOL.md
/// §A.11 and §B.3): whether a peer speaks format 2, learnt from the `sealed_v2` bit of
/// its most recent link handshake with this node, or from a valid format-2 envelope it
/// sealed to this node. Both facts are authenticated (the handshake proves the peer's identity; the
/// envelope carries its signature), so no relay can make this node believe either.
///
/// A sender seals format 1 only to a peer known not to speak format 2; a receiver
/// refuses a format-1 envelope from a peer known to speak format 2, since such a peer
/// seals format 1 to no node that announces `sealed_v2`: that envelope is a replay.
/// Held in memory, for the most recently learnt ``capacity`` peers.
final class EnvelopeFormats: Sendable {
    private struct State {
        var speaks: [PeerID: (formatTwo: Bool, stamp: UInt64)] = [:]
        var order = Deque<(peer: PeerID, stamp: UInt64)>()
        var nextStamp: UInt64 = 0
    }

    /// The most peers remembered; the oldest fact is forgotten first.
    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int = 4096) {
        self.capacity = max(1, capacity)
    }

    /// Records the capabilities a peer announced in a completed link handshake.
    func noteHandshake(with peer: PeerID, capabilities: Capabilities) {
        note(peer, formatTwo: capabilities.contains(.sealedV2))
    }

    /// Records that `origin` sealed a valid format-2 envelope to this node.
    func noteFormatTwo(from origin: PeerID) {
        note(origin, formatTwo: true)
    }

    /// Whether `peer` is known to speak format 2 (true), known not to (false), or
    /// unknown (nil).
    func speaksFormatTwo(_ peer: PeerID) -> Bool? {
        state.withLock { $0.speaks[peer]?.formatTwo }
    }

    private func note(_ peer: PeerID, formatTwo: Bool) {
        state.withLock { state in
            if state.speaks[peer]?.formatTwo == formatTwo { return }
            state.nextStamp += 1
            state.speaks[peer] = (formatTwo, state.nextStamp)
            state.order.append((peer, state.nextStamp))
            while state.speaks.count > capacity || state.order.count > 2 * capacity, let oldest = state.order.popFirst()
            {
                if state.speaks[oldest.peer]?.stamp == oldest.stamp { state.speaks[oldest.peer] = nil }
            }
            // Entries superseded by a newer fact about the same peer are dropped lazily.
            while let first = state.order.first, state.speaks[first.peer]?.stamp != first.stamp {
                state.order.removeFirst()
            }
        }
    }
}
