import Synchronization

// The table as kept across a restart, advertised to a neighbour and shown.
extension RouteTable {
    /// `origin`'s entry as it is, aged-out advertisements included (nil when there is
    /// none), for diagnostics: ages are from `now`.
    func entry(for origin: PeerID, now: ContinuousClock.Instant) -> SavedRouteEntry? {
        entries.withLock { entries in
            entries[origin].map { Self.saved(origin, $0, now: now) }
        }
    }

    /// Every entry with at least one advertisement younger than the maximum age, to
    /// keep across a restart (``RouteTableStore``).
    func saved(now: ContinuousClock.Instant) -> [SavedRouteEntry] {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            return entries.compactMap { origin, entry in
                let saved = Self.saved(origin, entry, now: now) { now - $0.updatedAt < maxAge }
                return saved.advertisements.isEmpty ? nil : saved
            }
        }
    }

    /// `entry` as kept or shown, with the advertisements `include` lets through; ages
    /// are from `now`.
    private static func saved(
        _ origin: PeerID,
        _ entry: Entry,
        now: ContinuousClock.Instant,
        include: (Route) -> Bool = { _ in true }
    ) -> SavedRouteEntry {
        SavedRouteEntry(
            origin: origin,
            highest: entry.highest,
            age: now - entry.seenAt,
            summarised: entry.summarised,
            feasibilityDistance: entry.feasible,
            advertisements: entry.routes.values.filter(include).map {
                SavedRouteEntry.Advertisement(
                    neighbour: $0.nextHop,
                    hops: $0.hops,
                    sequence: $0.sequence,
                    signature: $0.signature,
                    transport: $0.transport,
                    age: now - $0.updatedAt
                )
            }
        )
    }

    /// Takes back the entries a restarted node kept (``RouteTableStore``), before any
    /// link is up: each advertisement dormant until a link to its neighbour comes back,
    /// then used under the usual rules (highest sequence, feasibility distance, age).
    /// Entries about this node, advertisements through it, those already aged out and
    /// origins the table already holds are left out; at most the table's capacity.
    /// - Returns: how many entries were taken.
    @discardableResult
    func restore(_ saved: [SavedRouteEntry], now: ContinuousClock.Instant) -> Int {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: max(entries.count, saved.count))
            var taken = 0
            for item in saved
            where item.origin != localPeerID && entries[item.origin] == nil && entries.count < maxEntries {
                let routes = item.advertisements.filter { $0.neighbour != localPeerID && $0.age < maxAge }.map {
                    Route(
                        nextHop: $0.neighbour,
                        hops: $0.hops,
                        sequence: $0.sequence,
                        signature: $0.signature,
                        updatedAt: now - $0.age,
                        transport: $0.transport
                    )
                }
                guard !routes.isEmpty, item.age < maxAge else { continue }
                entries[item.origin] = Entry(
                    highest: item.highest,
                    seenAt: now - item.age,
                    summarised: item.summarised,
                    feasible: item.feasibilityDistance,
                    routes: Dictionary(routes.map { ($0.nextHop, $0) }) { a, _ in a }
                )
                taken += 1
            }
            return taken
        }
    }

    /// The usable announced routes, to re-announce (one hop further) to a neighbour:
    /// never routes through that neighbour itself, nor about it.
    func advertisable(to neighbour: PeerID, maxHops: UInt8, now: ContinuousClock.Instant) -> [AnnounceFrame] {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            return entries.compactMap { origin, entry -> AnnounceFrame? in
                guard origin != neighbour, let route = best(entry, now: now, maxAge: maxAge),
                    route.nextHop != neighbour,
                    route.hops < maxHops
                else { return nil }
                return Self.copy(of: route, in: entry, to: origin)
            }
        }
    }

    /// `route` to `origin`, one hop further, as an announcement to send: with the
    /// solicited flag when its sequence is above the highest this node took from an
    /// ordinary announcement (it came here as a request's answer, and goes on as one).
    static func copy(of route: Route, in entry: Entry, to origin: PeerID) -> AnnounceFrame {
        AnnounceFrame(
            origin: origin,
            sequence: route.sequence,
            hops: route.hops + 1,
            signature: route.signature,
            solicited: route.sequence > entry.summarised ?? 0
        )
    }

    /// Every route: direct links (1 hop) and usable announced routes, sorted by
    /// destination.
    func snapshot(now: ContinuousClock.Instant, rank: ([LinkSession]) -> LinkSession?) -> [RouteSnapshot] {
        var rows: [PeerID: RouteSnapshot] = [:]
        let announced = entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            return entries.compactMap { origin, entry in
                best(entry, now: now, maxAge: maxAge).map { (origin, $0, entry.highest) }
            }
        }
        for (origin, route, _) in announced {
            let transport = links.flatMap { rank($0.sessions(to: route.nextHop)) }?.transport ?? route.transport
            rows[origin] = RouteSnapshot(
                destination: origin,
                nextHop: route.nextHop,
                hops: Int(route.hops),
                sequence: route.sequence,
                ageMilliseconds: (now - route.updatedAt).wholeMilliseconds,
                transport: transport
            )
        }
        for peer in links?.peers ?? [] {
            guard let links, let best = rank(links.sessions(to: peer)) else { continue }
            let sequence = entries.withLock { $0[peer]?.highest }
            rows[peer] = RouteSnapshot(
                destination: peer,
                nextHop: peer,
                hops: 1,
                sequence: sequence,
                ageMilliseconds: 0,
                transport: best.transport
            )
        }
        return rows.values.sorted { $0.destination < $1.destination }
    }
}
