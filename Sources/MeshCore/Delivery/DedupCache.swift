import DequeModule

/// Remembers the last `capacity` message IDs, oldest forgotten first.
struct DedupCache {
    private var order: Deque<MessageID> = []
    private var members: Set<MessageID> = []
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    func contains(_ id: MessageID) -> Bool { members.contains(id) }

    /// Inserts `id`; returns false when it was already present.
    @discardableResult
    mutating func insert(_ id: MessageID) -> Bool {
        guard members.insert(id).inserted else { return false }
        order.append(id)
        if order.count > capacity, let oldest = order.popFirst() {
            members.remove(oldest)
        }
        return true
    }
}
