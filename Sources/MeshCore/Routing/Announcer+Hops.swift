import Synchronization

/// Route hops frames (docs/PROTOCOL.md §A.5, "Route summaries", *Hop counts*): route
/// summaries compare sequences, not hop counts, so a route stretched at the sequence
/// the mesh holds (its shorter copy lost on the way, or sent before a shorter link came
/// up) looks the same as a short one to every summary. Twice per neighbour, when a
/// neighbour's summary matches this node's table, this node sends it the hops of each
/// of its routes, one byte per origin in ascending order (the tables hold the same
/// origins, so none needs naming); the neighbour sends back its route wherever that is
/// shorter, and the route moves, and the nodes behind it learn it as any shorter route.
extension Announcer {
    /// `session`'s neighbour sent a summary that matches this node's table: it gets this
    /// node's hop counts, at the first two such summaries (``SummaryTimers/shareHops(with:)``).
    func matched(from session: LinkSession) {
        count("matched")
        guard configuration.hopCounts, summaryTimers.withLock({ $0.shareHops(with: session.remote) }) else { return }
        guard let frame = hopsFrame(now: clock.now) else { return }
        session.queueRouteSync(.routeHops(frame))
        count("hopsSent")
    }

    /// Takes a neighbour's hop counts: where they cover the table this node holds (the
    /// same digest), each origin this node has a route to, not through that neighbour,
    /// that one hop further is shorter than the neighbour's gets that route sent
    /// (``RouteTable/answer(for:atLeast:to:maxHops:now:)``), counted `hopShortcuts`.
    /// Hop counts of another table (it changed since the summary) are ignored, and so
    /// are those after the second on a link (``SummaryTimers/takeHops(from:)``,
    /// `hopsRepeated`) and every frame with ``RoutingConfiguration/hopCounts`` off.
    func accept(_ frame: RouteHopsFrame, from session: LinkSession) {
        guard configuration.hopCounts else { return }
        guard session.takeInboundAnnounceTokens(bytes: Frame.headerSize + frame.bodySize) else {
            return count("rateLimited")
        }
        guard isActive, relay.isEnabled else { return count("dropped") }
        guard summaryTimers.withLock({ $0.takeHops(from: session.remote) }) else { return count("hopsRepeated") }
        let now = clock.now
        let held = sortedRoutes(now: now)
        guard held.count == frame.hops.count, Self.digest(of: held) == frame.digest else { return count("hopsStale") }
        var offered = 0
        for (route, theirs) in zip(held, frame.hops) where route.origin != session.remote && route.origin != localPeerID
        {
            // Most origins leave here without taking the table's lock again.
            guard let mine = route.hops, mine &+ 1 < theirs else { continue }
            guard
                let answer = routes.answer(
                    for: route.origin,
                    atLeast: route.sequence,
                    to: session.remote,
                    maxHops: configuration.maxHops,
                    now: now
                ),
                answer.hops < theirs
            else { continue }
            session.queueAnnounce(answer)
            offered += 1
        }
        count("hopsCompared")
        if offered > 0 { stats.update { $0.routeSummaries["hopShortcuts", default: 0] += offered } }
    }

    /// This node's hop counts, as a frame (nil when its table has more origins than a
    /// frame carries).
    func hopsFrame(now: ContinuousClock.Instant) -> RouteHopsFrame? {
        let held = sortedRoutes(now: now)
        guard held.count <= RouteHopsFrame.maxPairs else { return nil }
        return RouteHopsFrame(digest: Self.digest(of: held), hops: held.map { $0.hops ?? RouteHopsFrame.noRoute })
    }

    /// One pair of a summary, with the hops of the route in use to its origin.
    private typealias HopPair = (origin: PeerID, sequence: UInt64, hops: UInt8?)

    /// The pairs a summary of this node hashes (``summaryPairs(now:)``), in ascending
    /// order of origin, each with the hops of its route in use: 0 for this node itself,
    /// nil where there is no usable route, at most ``RouteHopsFrame/noRoute`` − 1.
    private func sortedRoutes(now: ContinuousClock.Instant) -> [HopPair] {
        var held: [HopPair] = routes.summarisedRoutes(now: now).map {
            ($0.origin, $0.sequence, $0.hops.map { min($0, RouteHopsFrame.noRoute - 1) })
        }
        if let own = summarisedOwnSequence { held.append((localPeerID, own, 0)) }
        return held.sorted { $0.origin < $1.origin }
    }

    /// What a summary of 0 bucket bits of `pairs` carries.
    private static func digest(of pairs: [HopPair]) -> UInt64 {
        RouteSummaryFrame(bucketBits: 0, pairs: pairs.lazy.map { ($0.origin, $0.sequence) }).hashes[0]
    }

    private func count(_ what: String) {
        stats.update { $0.routeSummaries[what, default: 0] += 1 }
    }
}
