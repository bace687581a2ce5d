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
        var route: Route?
    }

    /// What ``consider(_:from:transport:now:)`` decided.
    enum Verdict: Equatable {
        /// Not used, and counted as rejected for `reason` (`stale`, `tableFull`).
        case rejected(String)
        /// Not better than the route held (same sequence, not shorter).
        case ignored
        /// Now the route; `changed` when the next hop differs from the usable route
        /// held before (or there was none).
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

    /// Takes a verified announcement that arrived from `neighbour`.
    func consider(_ announce: AnnounceFrame, from neighbour: PeerID, transport: String, now: ContinuousClock.Instant) -> Verdict {
        entries.withLock { entries in
            let entry = entries[announce.origin]
            let current = usable(entry?.route, now: now)
            if let entry {
                let fresh = now - entry.seenAt < maxAge
                if announce.sequence < entry.highest && fresh { return .rejected("stale") }
                if announce.sequence == entry.highest, let current, announce.hops >= current.hops { return .ignored }
            } else if entries.count >= maxEntries {
                return .rejected("tableFull")
            }
            let route = Route(
                nextHop: neighbour, hops: announce.hops, sequence: announce.sequence, signature: announce.signature,
                updatedAt: now, transport: transport)
            entries[announce.origin] = Entry(highest: announce.sequence, seenAt: now, route: route)
            return .accepted(changed: current?.nextHop != neighbour)
        }
    }

    /// The neighbour to hand a message for `destination` to: the destination itself
    /// when a link to it is up, else the next hop of a live route; nil when none.
    func nextHop(for destination: PeerID, now: ContinuousClock.Instant) -> PeerID? {
        if !links.sessions(to: destination).isEmpty { return destination }
        return entries.withLock { usable($0[destination]?.route, now: now)?.nextHop }
    }

    /// The announced route to `destination` (not a direct link), if usable.
    func route(to destination: PeerID, now: ContinuousClock.Instant) -> Route? {
        entries.withLock { usable($0[destination]?.route, now: now) }
    }

    /// Drops every route through `neighbour` (its last link went down). Returns the
    /// destinations that lost their route.
    @discardableResult
    func neighbourLost(_ neighbour: PeerID) -> [PeerID] {
        entries.withLock { entries in
            var lost: [PeerID] = []
            for (origin, entry) in entries where entry.route?.nextHop == neighbour {
                entries[origin]?.route = nil
                lost.append(origin)
            }
            return lost
        }
    }

    /// Forgets entries with no usable route whose last announcement is older than the
    /// maximum age.
    func prune(now: ContinuousClock.Instant) {
        entries.withLock { entries in
            for (origin, entry) in entries where now - entry.seenAt >= maxAge && usable(entry.route, now: now) == nil {
                entries[origin] = nil
            }
        }
    }

    /// The usable announced routes, to re-announce (one hop further) to a neighbour:
    /// never routes through that neighbour itself, nor about it.
    func advertisable(to neighbour: PeerID, maxHops: UInt8, now: ContinuousClock.Instant) -> [AnnounceFrame] {
        entries.withLock { entries in
            entries.compactMap { origin, entry -> AnnounceFrame? in
                guard origin != neighbour, let route = usable(entry.route, now: now), route.nextHop != neighbour,
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
            entries.compactMap { origin, entry in usable(entry.route, now: now).map { (origin, $0, entry.highest) } }
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
