import DequeModule
import Synchronization

/// The flood duplicate cache: IDs of flooded messages this node already took (or
/// started), so a copy arriving later — by another neighbour, or after a restart — is
/// acknowledged as a duplicate and never flooded again (docs/PROTOCOL.md §A.9).
///
/// ``InMemoryFloodSeenStore`` is the default; the node's store (MeshStore's
/// `FloodSeenLog`) keeps it across restarts.
public protocol FloodSeenStore: Sendable {
    /// Whether `id` is remembered.
    func contains(_ id: MessageID) async -> Bool
    /// Remembers `id` (durably, for a persistent store) before the flood frame that
    /// carried it is acknowledged.
    /// - Returns: true when it was new.
    /// - Throws: when it cannot be kept; the frame is then refused, so its sender retries.
    @discardableResult
    func insert(_ id: MessageID) async throws -> Bool
}

/// The in-memory flood duplicate cache: the last `capacity` IDs, oldest forgotten first.
public final class InMemoryFloodSeenStore: FloodSeenStore {
    private struct State {
        var order = Deque<MessageID>()
        var members = Set<MessageID>()
    }

    /// IDs remembered at most.
    public let capacity: Int
    private let state = Mutex(State())

    /// Creates an empty cache holding at most `capacity` IDs (at least 1).
    public init(capacity: Int = 65_536) {
        self.capacity = max(1, capacity)
    }

    public func contains(_ id: MessageID) async -> Bool {
        state.withLock { $0.members.contains(id) }
    }

    @discardableResult
    public func insert(_ id: MessageID) async throws -> Bool {
        state.withLock { state in
            guard state.members.insert(id).inserted else { return false }
            state.order.append(id)
            if state.order.count > capacity, let oldest = state.order.popFirst() { state.members.remove(oldest) }
            return true
        }
    }

    /// IDs remembered now.
    public var count: Int { state.withLock { $0.members.count } }
}
