import Synchronization

/// The routes this node learned from announcements: destination → next hop (a
/// neighbour), hops, the origin's sequence, when it was confirmed. A live direct link
/// is always a 1-hop route and wins over any announced one. Routes through a neighbour
/// are unused while no link to it is up (kept, dormant, for when one comes back);
/// routes not confirmed for the route maximum age (scaled with the table,
/// ``RoutingConfiguration/routeMaxAge(origins:)``) age out.
///
/// Loop freedom (Babel's feasibility condition, docs/PROTOCOL.md §A.5): per origin the
/// table keeps its *feasibility distance*, the fewest hops of any route it used at the
/// origin's highest sequence; an advertisement at that sequence is usable only when it
/// has no more hops than that distance (its neighbour was strictly closer to the
/// origin than this node was), so falling back to an alternate can never make a route
/// that leads back through this node.
package final class RouteTable: Sendable {
    struct Route: Sendable {
        var nextHop: PeerID
        var hops: UInt8
        var sequence: UInt64
        var signature: [UInt8]
        var updatedAt: ContinuousClock.Instant
        var transport: String
    }

    struct Entry {
        /// The highest sequence accepted from the origin, and when.
        var highest: UInt64
        var seenAt: ContinuousClock.Instant
        /// The highest sequence accepted from an announcement without the solicited
        /// flag (nil when only solicited ones were): what route summaries list.
        var summarised: UInt64?
        /// The feasibility distance: the fewest hops of a route in use at `highest`
        /// (255 before any).
        var feasible: UInt8 = .max
        /// The latest route each neighbour advertised: the best usable one is used,
        /// the others are kept as alternates for when its neighbour goes.
        var routes: [PeerID: Route] = [:]
    }

    /// What ``consider(_:from:transport:now:)`` decided.
    package enum Verdict: Equatable, Sendable {
        /// Not used, and counted as rejected for `reason` (`stale`, `tableFull`).
        case rejected(String)
        /// Not better than the route in use (kept as an alternate when it is as new).
        case ignored
        /// Now the route in use; `changed` when the next hop differs from the usable
        /// route before (or there was none); `refresh` when only the sequence is newer
        /// (the same next hop and hop count as the route before); `gained` when there
        /// was no usable route before.
        case accepted(changed: Bool, refresh: Bool = false, gained: Bool = false)
    }

    let localPeerID: PeerID
    let links: LinkTable?
    let isLinked: @Sendable (PeerID) -> Bool
    let routing: RoutingConfiguration
    let maxEntries: Int
    /// Origin → entry (the extensions in other files read it under its lock).
    let entries = Mutex<[PeerID: Entry]>([:])

    /// The router's table: a neighbour is live while `links` holds a session to it.
    convenience init(localPeerID: PeerID, links: LinkTable, routing: RoutingConfiguration, maxEntries: Int = 65_536) {
        self.init(localPeerID: localPeerID, links: links, routing: routing, maxEntries: maxEntries) {
            !links.sessions(to: $0).isEmpty
        }
    }

    /// A table on its own (tests): `isLinked` says whether a neighbour is live.
    package convenience init(
        localPeerID: PeerID,
        routing: RoutingConfiguration,
        maxEntries: Int = 65_536,
        isLinked: @escaping @Sendable (PeerID) -> Bool
    ) {
        self.init(localPeerID: localPeerID, links: nil, routing: routing, maxEntries: maxEntries, isLinked: isLinked)
    }

    private init(
        localPeerID: PeerID,
        links: LinkTable?,
        routing: RoutingConfiguration,
        maxEntries: Int,
        isLinked: @escaping @Sendable (PeerID) -> Bool
    ) {
        self.localPeerID = localPeerID
        self.links = links
        self.routing = routing
        self.maxEntries = maxEntries
        self.isLinked = isLinked
    }

    /// Origins the table holds an entry for.
    package var origins: Int { entries.withLock { $0.count } }

    private func usable(
        _ route: Route?,
        now: ContinuousClock.Instant,
        maxAge: Duration,
        alsoLive: PeerID? = nil
    ) -> Route? {
        guard let route, now - route.updatedAt < maxAge, route.nextHop == alsoLive || isLinked(route.nextHop) else {
            return nil
        }
        return route
    }

    /// The route in use for an entry: among the usable, feasible routes at the highest
    /// sequence (older ones could lead back through this node, and so could those with
    /// more hops than the feasibility distance), the one with the fewest hops; ties go
    /// to the neighbour with the lowest peer ID, so the choice is stable.
    /// `alsoLive` counts as linked (a neighbour whose last link just went).
    func best(_ entry: Entry?, now: ContinuousClock.Instant, maxAge: Duration, alsoLive: PeerID? = nil) -> Route? {
        guard let entry else { return nil }
        // One pass, no copies; a route that would not beat the best so far is not
        // checked for liveness (next hops are the keys, so there are no ties).
        var chosen: Route?
        for route in entry.routes.values where route.sequence == entry.highest && route.hops <= entry.feasible {
            if let best = chosen, !((route.hops, route.nextHop) < (best.hops, best.nextHop)) { continue }
            if usable(route, now: now, maxAge: maxAge, alsoLive: alsoLive) != nil { chosen = route }
        }
        return chosen
    }

    /// Takes a verified announcement that arrived from `neighbour`.
    package func consider(
        _ announce: AnnounceFrame,
        from neighbour: PeerID,
        transport: String,
        now: ContinuousClock.Instant
    ) -> Verdict {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            let current: Route?
            let known: Bool
            do {
                let entry = entries[announce.origin]
                current = best(entry, now: now, maxAge: maxAge)
                if let existing = entry {
                    // An ordinary announcement of a sequence this node holds, or an
                    // older one (a repeat, a stale copy): the whole mesh is given that
                    // sequence, so summaries list it (docs/PROTOCOL.md §A.5).
                    if !announce.solicited, announce.sequence <= existing.highest,
                        announce.sequence > existing.summarised ?? 0
                    {
                        entries[announce.origin]?.summarised = announce.sequence
                    }
                    if announce.sequence < existing.highest && now - existing.seenAt < maxAge {
                        return .rejected("stale")
                    }
                } else if entries.count >= maxEntries {
                    return .rejected("tableFull")
                }
                if let held = entry?.routes[neighbour], held.sequence == announce.sequence, held.hops <= announce.hops {
                    return .ignored  // a repeat of what this neighbour said
                }
                known = entry != nil
            }
            // Taken out of the table while it changes, so its routes are not copied.
            var updated = entries.removeValue(forKey: announce.origin) ?? Entry(highest: announce.sequence, seenAt: now)
            if announce.sequence != updated.highest || !known {
                // Newer (or, past the maximum age, a restarted origin's lower sequence).
                if announce.sequence < updated.highest { updated.summarised = nil }
                updated.highest = announce.sequence
                updated.seenAt = now
                updated.feasible = .max
            }
            if !announce.solicited { updated.summarised = max(updated.summarised ?? 0, announce.sequence) }
            updated.routes[neighbour] = Route(
                nextHop: neighbour,
                hops: announce.hops,
                sequence: announce.sequence,
                signature: announce.signature,
                updatedAt: now,
                transport: transport
            )
            let chosen = best(updated, now: now, maxAge: maxAge)
            if let chosen { updated.feasible = min(updated.feasible, chosen.hops) }
            entries[announce.origin] = updated
            guard let chosen, chosen.nextHop == neighbour else { return .ignored }
            if let current, current.nextHop == neighbour, current.sequence == chosen.sequence,
                current.hops == chosen.hops
            {
                return .ignored
            }
            guard let current else { return .accepted(changed: true, gained: true) }
            guard current.nextHop == neighbour else { return .accepted(changed: true) }
            return .accepted(changed: false, refresh: current.hops == chosen.hops)
        }
    }

    /// The neighbour to hand a message for `destination` to: the destination itself
    /// when a link to it is up, else the next hop of a live route; nil when none.
    package func nextHop(for destination: PeerID, now: ContinuousClock.Instant) -> PeerID? {
        if isLinked(destination) { return destination }
        return entries.withLock {
            best($0[destination], now: now, maxAge: routing.routeMaxAge(origins: $0.count))?.nextHop
        }
    }

    /// The highest sequence of `origin`'s announcements this node holds (while its
    /// entry is younger than the maximum age); nil when none.
    func highestSequence(of origin: PeerID, now: ContinuousClock.Instant) -> UInt64? {
        entries.withLock { entries in
            guard let entry = entries[origin], now - entry.seenAt < routing.routeMaxAge(origins: entries.count) else {
                return nil
            }
            return entry.highest
        }
    }

    /// The answer to `neighbour`'s route request for `target` (docs/PROTOCOL.md §A.5):
    /// the route in use, one hop further, when its sequence is at least `sequence`, it
    /// does not go through `neighbour` and is shorter than `maxHops`; nil otherwise.
    func answer(
        for target: PeerID,
        atLeast sequence: UInt64,
        to neighbour: PeerID,
        maxHops: UInt8,
        now: ContinuousClock.Instant
    ) -> AnnounceFrame? {
        entries.withLock { entries in
            guard let entry = entries[target],
                let route = best(entry, now: now, maxAge: routing.routeMaxAge(origins: entries.count)),
                route.sequence >= sequence, route.nextHop != neighbour, route.hops < maxHops
            else { return nil }
            return Self.copy(of: route, in: entry, to: target)
        }
    }

    /// The neighbour to forward a route request for `target` to, other than
    /// `neighbour` (who sent it): the target itself when linked; else the next hop of
    /// the route in use; else the live neighbour whose advertisement is newest (then
    /// shortest), feasible or not — a request cannot make a loop, it only asks. Only
    /// routes of fewer than `hopLimit` hops count (rule 4: along a longer one the
    /// request dies before the target).
    func requestHop(
        for target: PeerID,
        except neighbour: PeerID,
        below hopLimit: UInt8,
        now: ContinuousClock.Instant
    ) -> PeerID? {
        if target != neighbour, isLinked(target) { return target }
        return entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            guard let entry = entries[target] else { return nil }
            if let route = best(entry, now: now, maxAge: maxAge), route.nextHop != neighbour, route.hops < hopLimit {
                return route.nextHop
            }
            var chosen: Route?
            for route in entry.routes.values
            where route.nextHop != neighbour && now - route.updatedAt < maxAge && route.hops < hopLimit {
                if let best = chosen, (best.sequence, UInt8.max - best.hops) >= (route.sequence, UInt8.max - route.hops)
                {
                    continue
                }
                if isLinked(route.nextHop) { chosen = route }
            }
            return chosen?.nextHop
        }
    }

    /// The live neighbours that advertise `target` (not aged out, feasible or not),
    /// best first: newest sequence, then fewest hops, then lowest peer ID. A node
    /// without a usable route asks them for a newer one, one at a time.
    func requestCandidates(for target: PeerID, now: ContinuousClock.Instant) -> [PeerID] {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            guard let entry = entries[target] else { return [] }
            return entry.routes.values
                .filter { now - $0.updatedAt < maxAge && isLinked($0.nextHop) }
                .sorted { ($0.sequence, $1.hops, $1.nextHop) > ($1.sequence, $0.hops, $0.nextHop) }
                .map(\.nextHop)
        }
    }

    /// Whether `neighbour` has already told this node about `origin` at `sequence`
    /// (or newer) with at most `hops` hops — then it is at least as close to the
    /// origin as an announcement of `hops` hops sent to it would make it, and sending
    /// that would change nothing there.
    package func neighbour(_ neighbour: PeerID, knows origin: PeerID, sequence: UInt64, within hops: UInt8) -> Bool {
        entries.withLock { entries in
            guard let held = entries[origin]?.routes[neighbour] else { return false }
            return held.sequence > sequence || (held.sequence == sequence && held.hops <= hops)
        }
    }

    /// `neighbour`'s last link went down: the routes through it are no longer used.
    /// They stay in the table, *dormant*, until they age out: when a link to the same
    /// neighbour comes back before that (a flap under loss, a healed partition, a
    /// restarted neighbour), they are usable again at once, as they would be had the
    /// neighbour only been silent, instead of leaving this node starved until their
    /// origins announce anew. (Loop-free as ever: a dormant route is used only at its
    /// origin's highest sequence held and within the feasibility distance.)
    /// - Returns: the destinations whose route in use went through it, and of those
    ///   the ones that still have a route (an alternate through another neighbour).
    package func neighbourLost(
        _ neighbour: PeerID,
        now: ContinuousClock.Instant
    ) -> (lost: [PeerID], rerouted: [PeerID]) {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            var lost: [PeerID] = []
            var rerouted: [PeerID] = []
            for (origin, entry) in entries where entry.routes[neighbour] != nil {
                // The link table no longer holds the neighbour: it was in use if it
                // would be the route with its link still up.
                guard best(entry, now: now, maxAge: maxAge, alsoLive: neighbour)?.nextHop == neighbour else { continue }
                lost.append(origin)
                if best(entry, now: now, maxAge: maxAge) != nil { rerouted.append(origin) }
            }
            return (lost, rerouted)
        }
    }

    /// A link to `neighbour` came up: the destinations whose route in use now goes
    /// through it (its dormant routes woke, or it is a better next hop than before).
    package func neighbourBack(_ neighbour: PeerID, now: ContinuousClock.Instant) -> [PeerID] {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            return entries.compactMap { origin, entry in
                entry.routes[neighbour] != nil && best(entry, now: now, maxAge: maxAge)?.nextHop == neighbour
                    ? origin : nil
            }
        }
    }

    /// Forgets entries with no usable route whose last announcement is older than the
    /// maximum age.
    package func prune(now: ContinuousClock.Instant) {
        entries.withLock { entries in
            let maxAge = routing.routeMaxAge(origins: entries.count)
            for (origin, var entry) in entries {
                entry.routes = entry.routes.filter { now - $0.value.updatedAt < maxAge }
                entries[origin] = entry.routes.isEmpty && now - entry.seenAt >= maxAge ? nil : entry
            }
        }
    }
}
