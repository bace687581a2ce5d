/// The neighbours waiting for a target's new sequence (docs/PROTOCOL.md §A.5, "Route
/// requests"): a node that forwards a route request for target T at sequence s from
/// neighbour N (or drops it as a repeat of one it forwarded) records (T, N, s) for
/// ``lifetime``. The solicited announcement that T makes in answer is then passed back
/// to N, and not to neighbours that did not ask (RFC 8966 §3.8.2: Babel routes a
/// seqno request's answer back toward the requesters). At most ``capacity`` entries:
/// a request that finds the table full of live entries is not recorded, which costs
/// only time (N asks again, and this node, which has taken the new sequence by then,
/// answers from its table).
///
/// A neighbour answered stays recorded, with the sequence and hops it was given, for
/// the rest of its entry's lifetime: a copy of the same sequence by a shorter way,
/// arriving later, is passed to it too (docs/PROTOCOL.md §A.5, "Solicited
/// announcements", rule 1), so that the first copy to come back, often by a detour
/// (the request went every way), does not fix the hop count of the route the asker
/// and everyone behind it get.
package struct PendingRequesters: Sendable {
    /// How long an entry waits for its answer: as long as the longest wait between a
    /// requester's asks, after which a new request records it again.
    package static let lifetime: Duration = RouteRequests.longestWait
    /// The most entries held (targets × requesting neighbours).
    package static let capacity = 4096

    private struct Waiting: Sendable {
        /// The oldest sequence of the target that answers the neighbour.
        var sequence: UInt64
        /// When the entry is forgotten.
        var until: ContinuousClock.Instant
        /// The hops of the copy it was given (nil while it waits): a copy of `sequence`
        /// with fewer hops goes to it too.
        var given: UInt8?
    }

    private var waiting: [PeerID: [PeerID: Waiting]] = [:]

    /// An empty table.
    package init() {}
    /// The entries held, over every target.
    package private(set) var count = 0

    /// Records that `neighbour` wants `target` at `sequence` or newer, until
    /// ``lifetime`` from `now` (an entry already held keeps the higher sequence and
    /// the later expiry). False when the table is full of live entries and the new one
    /// is not recorded.
    @discardableResult
    package mutating func record(
        _ target: PeerID,
        from neighbour: PeerID,
        sequence: UInt64,
        now: ContinuousClock.Instant
    ) -> Bool {
        let until = now + Self.lifetime
        if var held = waiting[target]?[neighbour] {
            if held.given != nil, sequence > held.sequence { held.given = nil }
            held.sequence = max(held.sequence, sequence)
            held.until = until
            waiting[target]![neighbour] = held
            return true
        }
        if count >= Self.capacity { purge(now: now) }
        guard count < Self.capacity else { return false }
        waiting[target, default: [:]][neighbour] = Waiting(sequence: sequence, until: until)
        count += 1
        return true
    }

    /// The neighbours that an announcement of `origin` at `sequence`, `hops` hops as
    /// passed on, answers: those whose entries have not expired and that asked for
    /// `sequence` or older and were not given it yet, or were given a copy of exactly
    /// `sequence` with more hops than `hops`. Each is marked as given `sequence` at
    /// `hops`; expired entries of `origin` are removed.
    package mutating func take(
        _ origin: PeerID,
        sequence: UInt64,
        hops: UInt8,
        now: ContinuousClock.Instant
    ) -> [PeerID] {
        guard var entries = waiting.removeValue(forKey: origin) else { return [] }
        var answered: [PeerID] = []
        for (neighbour, var entry) in entries {
            guard entry.until > now else {
                entries[neighbour] = nil
                count -= 1
                continue
            }
            let owed = entry.given.map { sequence == entry.sequence && hops < $0 } ?? (entry.sequence <= sequence)
            guard owed else { continue }
            answered.append(neighbour)
            (entry.sequence, entry.given) = (sequence, hops)
            entries[neighbour] = entry
        }
        if !entries.isEmpty { waiting[origin] = entries }
        return answered
    }

    /// Forgets the expired entries.
    private mutating func purge(now: ContinuousClock.Instant) {
        for (target, entries) in waiting {
            let live = entries.filter { $0.value.until > now }
            count -= entries.count - live.count
            waiting[target] = live.isEmpty ? nil : live
        }
    }
}
