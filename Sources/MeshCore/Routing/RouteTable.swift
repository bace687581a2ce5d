import Synchronization

/// The routes this node learned from announcements: destination → next hop (a
/// neighbour), hops, the origin's sequence, when it was confirmed. A live direct link
/// is always a 1-hop route and wins over any announced one. Routes through a neighbour
/// go when its last link goes; routes not confirmed for `routeMaxAge` age out.
final class RouteTable: Sendable {
    struct Route: Sendable {
        var nextHop: PeerID
        var hops: UInt8
        var sequence: UInt64
        var signature: [UInt8]
        var updatedAt: ContinuousClock.Instant
        var transport: String
    }

    private struct Entry {
        /// The highest sequence accepted from the origin, and when.
        var highest: UInt64
        var seenAt: ContinuousClock.Instant
        /// The latest route each neighbour advertised: the best usable one is used,
        /// the others are kept as alternates for when its neighbour goes.
        var routes: [PeerID: Route] = [:]
    }

    /// What ``consider(_:from:transport:now:)`` decided.
    enum Verdict: Equatable {
        /// Not used, and counted as rejected for `reason` (`stale`, `tableFull`).
        case rejected(String)
        /// Not better than the route in use (kept as an alternate when it is as new).
        case ignored
        /// Now the route in use; `changed` when the next hop differs from the usable
        /// route before (or there was none).
        case accepted(changed: Bool)
    }

    private let localPeerID: PeerID
    private let links: LinkTable
    private let maxAge: Duration
    private let maxEntries: Int
    private let entries = Mutex<[PeerID: Entry]>([:])

    init(localPeerID: PeerID, links: LinkTable, maxAge: Duration, maxEntries: Int = 65_536) {
        self.localPeerID = localPeerID
        self.links = links
        self.maxAge = maxAge
        self.maxEntries = maxEntries
    }

    private func usable(_ route: Route?, now: ContinuousClock.Instant) -> Route? {
        guard let route, now - route.updatedAt < maxAge, !links.sessions(to: route.nextHop).isEmpty else { return nil }
        return route
    }

    /// The route in use for an entry: among the usable routes at the highest sequence
    /// (older ones could lead back through this node), the one with the fewest hops;
    /// ties go to the neighbour with the lowest peer ID, so the choice is stable.
    private func best(_ entry: Entry?, now: ContinuousClock.Instant) -> Route? {
        guard let entry else { return nil }
        return entry.routes.values
            .filter { $0.sequence == entry.highest && usable($0, now: now) != nil }
            .min { ($0.hops, $0.nextHop) < ($1.hops, $1.nextHop) }
    }

    /// Takes a verified announcement that arrived from `neighbour`.
    func consider(_ announce: AnnounceFrame, from neighbour: PeerID, transport: String, now: ContinuousClock.Instant) -> Verdict {
        entries.withLock { entries in
            let entry = entries[announce.origin]
            let current = best(entry, now: now)
            if let existing = entry {
                if announce.sequence < existing.highest && now - existing.seenAt < maxAge { return .rejected("stale") }
            } else if entries.count >= maxEntries {
                return .rejected("tableFull")
            }
            if let held = entry?.routes[neighbour], held.sequence == announce.sequence, held.hops <= announce.hops {
                return .ignored  // a repeat of what this neighbour said
            }
            var updated = entry ?? Entry(highest: announce.sequence, seenAt: now)
            if announce.sequence != updated.highest || entry == nil {
                // Newer (or, past the maximum age, a restarted origin's lower sequence).
                updated.highest = announce.sequence
                updated.seenAt = now
            }
            updated.routes[neighbour] = Route(
                nextHop: neighbour, hops: announce.hops, sequence: announce.sequence, signature: announce.signature,
                updatedAt: now, transport: transport)
            entries[announce.origin] = updated
            guard let chosen = best(updated, now: now), chosen.nextHop == neighbour else { return .ignored }
            if let current, current.nextHop == neighbour, current.sequence == chosen.sequence, current.hops == chosen.hops {
                return .ignored
            }
            return .accepted(changed: current?.nextHop != neighbour)
        }
    }

    /// The neighbour to hand a message for `destination` to: the destination itself
    /// when a link to it is up, else the next hop of a live route; nil when none.
    func nextHop(for destination: PeerID, now: ContinuousClock.Instant) -> PeerID? {
        if !links.sessions(to: destination).isEmpty { return destination }
        return entries.withLock { best($0[destination], now: now)?.nextHop }
    }

    /// Drops every route through `neighbour` (its last link went down).
    /// - Returns: the destinations whose route in use went through it, and of those
    ///   the ones that still have a route (an alternate through another neighbour).
    func neighbourLost(_ neighbour: PeerID, now: ContinuousClock.Instant) -> (lost: [PeerID], rerouted: [PeerID]) {
        entries.withLock { entries in
            var lost: [PeerID] = []
            var rerouted: [PeerID] = []
            for (origin, entry) in entries where entry.routes[neighbour] != nil {
                let wasInUse = best(entry, now: now)?.nextHop == neighbour
                entries[origin]?.routes[neighbour] = nil
                guard wasInUse else { continue }
                lost.append(origin)
                if best(entries[origin], now: now) != nil { rerouted.append(origin) }
            }
            return (lost, rerouted)
        }
    }

    /// Forgets entries with no usable route whose last announcement is older than the
    /// maximum age.
    func prune(now: ContinuousClock.Instant) {
        entries.withLock { entries in
            for (origin, var entry) in entries {
                entry.routes = entry.routes.filter { now - $0.value.updatedAt < maxAge }
                entries[origin] = entry.routes.isEmpty && now - entry.seenAt >= maxAge ? nil : entry
            }
        }
    }

    /// The usable announced routes, to re-announce (one hop further) to a neighbour:
    /// never routes through that neighbour itself, nor about it.
    func advertisable(to neighbour: PeerID, maxHops: UInt8, now: ContinuousClock.Instant) -> [AnnounceFrame] {
        entries.withLock { entries in
            entries.compactMap { origin, entry -> AnnounceFrame? in
                guard origin != neighbour, let route = best(entry, now: now), route.nextHop != neighbour,
                      route.hops < maxHops else { return nil }
                return AnnounceFrame(origin: origin, sequence: route.sequence, hops: route.hops + 1, signature: route.signature)
            }
        }
    }

    /// Every route: direct links (1 hop) and usable announced routes, sorted by
    /// destination.
    func snapshot(now: ContinuousClock.Instant, rank: ([LinkSession]) -> LinkSession?) -> [RouteSnapshot] {
        var rows: [PeerID: RouteSnapshot] = [:]
        let announced = entries.withLock { entries in
            entries.compactMap { origin, entry in best(entry, now: now).map { (origin, $0, entry.highest) } }
        }
        for (origin, route, _) in announced {
            let transport = rank(links.sessions(to: route.nextHop))?.transport ?? route.transport
            rows[origin] = RouteSnapshot(
                destination: origin, nextHop: route.nextHop, hops: Int(route.hops), sequence: route.sequence,
                ageMilliseconds: (now - route.updatedAt).wholeMilliseconds, transport: transport)
        }
        for peer in links.peers {
            guard let best = rank(links.sessions(to: peer)) else { continue }
            let sequence = entries.withLock { $0[peer]?.highest }
            rows[peer] = RouteSnapshot(destination: peer, nextHop: peer, hops: 1, sequence: sequence, ageMilliseconds: 0, transport: best.transport)
        }
        return rows.values.sorted { $0.destination < $1.destination }
    }
}
