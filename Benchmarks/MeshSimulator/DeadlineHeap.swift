/// A binary min-heap of (deadline, id) pairs for ``SimulationClock``: the earliest
/// sleeper in O(1), insertion and removal of the earliest in O(log n). Entries of
/// sleepers that left early (cancelled) stay until they reach the top; the clock skips
/// them there.
struct DeadlineHeap {
    struct Entry {
        var deadline: ContinuousClock.Instant
        var id: UInt64
    }

    private var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    /// The earliest entry, if any.
    var first: Entry? { entries.first }

    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    mutating func insert(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry.
    mutating func popFirst() -> Entry? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let first = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count && Self.before(entries[left], entries[smallest]) { smallest = left }
            if right < entries.count && Self.before(entries[right], entries[smallest]) { smallest = right }
            guard smallest != parent else { break }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
        return first
    }
}
