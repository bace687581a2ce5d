import Synchronization

/// What route summaries and route hops frames are made of (docs/PROTOCOL.md §A.5,
/// "Route summaries").
extension RouteTable {
    /// Every origin's highest sequence held from an announcement without the solicited
    /// flag, else its highest (entries younger than the maximum age): what a route
    /// summary hashes (docs/PROTOCOL.md §A.5, "Route summaries").
    func highestSequences(now: ContinuousClock.Instant) -> [(origin: PeerID, sequence: UInt64)] {
        summarised(now: now) { origin, sequence, _, _ in (origin, sequence) }
    }

    /// The pairs of ``highestSequences(now:)``, each with the hops of the route in use to
    /// its origin (1 for a live neighbour; nil where there is no usable route): what a
    /// route hops frame carries.
    func summarisedRoutes(now: ContinuousClock.Instant) -> [(origin: PeerID, sequence: UInt64, hops: UInt8?)] {
        summarised(now: now) { origin, sequence, entry, maxAge in
            (origin, sequence, isLinked(origin) ? 1 : best(entry, now: now, maxAge: maxAge)?.hops)
        }
    }

    /// `make` of each entry younger than the maximum age, with its summarised sequence
    /// (the highest from an announcement without the solicited flag, else the highest)
    /// and the maximum age, under the table's lock.
    private func summarised<T: Sendable>(
        now: ContinuousClock.Instant,
        _ make: (PeerID, UInt64, Entry, Duration) -> T
    ) -> [T] {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            return entries.compactMap { origin, entry in
                now - entry.seenAt < maxAge ? make(origin, entry.summarised ?? entry.highest, entry, maxAge) : nil
            }
        }
    }
}
