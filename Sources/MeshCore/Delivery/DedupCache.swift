import DequeModule

/// Remembers the last `capacity` messages received, oldest forgotten first.
///
/// A message ID is chosen by its origin, so it is remembered with the origin: one
/// origin's message never makes another origin's message with the same ID a
/// duplicate.
struct DedupCache {
    /// One remembered message: its origin and its ID.
    struct Key: Hashable {
        var origin: PeerID
        var id: MessageID
    }

    private var order: Deque<Key> = []
    private var members: Set<Key> = []
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    func contains(_ id: MessageID, from origin: PeerID) -> Bool { members.contains(Key(origin: origin, id: id)) }

    /// Inserts `id` from `origin`; returns false when it was already present.
    @discardableResult
    mutating func insert(_ id: MessageID, from origin: PeerID) -> Bool {
        let key = Key(origin: origin, id: id)
        guard members.insert(key).inserted else { return false }
        order.append(key)
        if order.count > capacity, let oldest = order.popFirst() {
            members.remove(oldest)
        }
        return true
    }
}
