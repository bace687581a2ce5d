import Synchronization

/// A settable asynchronous yes-or-no question about a peer: the announcer's "does a
/// message still wait for this destination?" (set to the outbound queue's
/// ``OutboundQueue/holdsUnsent(for:)``). Unset, the answer is yes. The closure sits in
/// a struct for the reason ``PeerCallback`` gives.
final class PeerCheck: Sendable {
    private struct Handler: Sendable {
        let call: @Sendable (PeerID) async -> Bool
    }

    private let handler = Mutex<Handler?>(nil)

    /// Sets the question.
    func set(_ call: @escaping @Sendable (PeerID) async -> Bool) {
        handler.withLock { $0 = Handler(call: call) }
    }

    /// Asks it for `peer` (true before it is set).
    func callAsFunction(_ peer: PeerID) async -> Bool {
        guard let handler = handler.withLock({ $0 }) else { return true }
        return await handler.call(peer)
    }
}
