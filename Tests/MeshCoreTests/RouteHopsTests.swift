import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing

/// Hop counts (docs/PROTOCOL.md §A.5, "Route summaries", *Hop counts*): a neighbour
/// whose summary matches gets the hops of every route, twice per neighbour, one byte per
/// origin in ascending order; a node that gets them sends back each of its routes that,
/// one hop further, is shorter than the neighbour's. Summaries compare sequences only,
/// so without this a route stretched at the sequence the mesh holds stays so until its
/// origin's next sequence.
@Suite struct RouteHopsTests {
    /// Z announces six origins to R at 2 hops. X's matching digest gets R's hop counts
    /// (0 for R, 2 for each origin, in ascending order of origin); so does the next
    /// matching digest, and the third gets none. X's hop counts, claiming 5 hops to the
    /// first origin, 3 to the second (what R's route gives: nothing to offer) and none
    /// to the third, get R's 3-hop routes to the first and third, twice (the second
    /// time they come on the link; a lost offer is made again), and not a third time;
    /// hop counts of a table that lacks an origin get nothing. With `hopCounts` off,
    /// neither.
    @Test(.timeLimit(.minutes(3)), arguments: [true, false])
    func aMatchingSummaryGetsHopCountsAndHopCountsGetShorterRoutes(on: Bool) async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWith(
            ["X", "Z"],
            clock: clock,
            routing: RoutingConfiguration(hopCounts: on)
        )
        defer { Task { await setup.stop() } }
        let (router, r, x, z) = (setup.router, setup.r, setup.x, setup.z)
        let origins = (0..<6).map { _ in PeerID.random() }.sorted()
        for origin in origins {
            try await z.send(AnnounceTests.announce(origin, 10, hops: 2, signer: TestReceiptSigner(peer: origin)))
        }
        try await waitUntil("R has routes to the six") { await router.routes().count == 8 }
        try await x.sync(10)
        let own = try #require(x.seen.announces.withLock { $0.last { $0.origin == r } })
        let pairs = ([(origin: r, sequence: own.sequence)] + origins.map { (origin: $0, sequence: UInt64(10)) }).sorted
        { $0.origin < $1.origin }
        let digest = RouteSummaryFrame(bucketBits: 0, pairs: pairs).hashes[0]

        try await x.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs)))
        try await x.sync(20)
        try await x.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs)))
        try await x.sync(30)
        try await x.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs)))
        try await x.sync(35)
        let expected = RouteHopsFrame(digest: digest, hops: pairs.map { $0.origin == r ? 0 : 2 })
        #expect(x.seen.hops.withLock { $0 } == (on ? [expected, expected] : []))
        #expect(await router.stats().routeSummaries["matched"] == 3)

        let announced = x.seen.announces.withLock(\.count)
        var theirs = pairs.map { $0.origin == r ? UInt8(1) : 3 }
        for (origin, hops) in [(origins[0], UInt8(5)), (origins[2], RouteHopsFrame.noRoute)] {
            theirs[try #require(pairs.firstIndex { $0.origin == origin })] = hops
        }
        try await x.send(.routeHops(RouteHopsFrame(digest: digest, hops: theirs)))
        try await x.sync(40)
        let offered = x.seen.announces.withLock { Array($0.dropFirst(announced)) }
        #expect(offered.map(\.origin).sorted() == (on ? [origins[0], origins[2]].sorted() : []))
        #expect(offered.allSatisfy { $0.hops == 3 && $0.sequence == 10 })

        // The same hop counts again on this link: the same offers once more (the first
        // may have been lost), then nothing (a neighbour repeating them cannot have R
        // send its routes again and again).
        try await x.send(.routeHops(RouteHopsFrame(digest: digest, hops: theirs)))
        try await x.sync(45)
        #expect(x.seen.announces.withLock(\.count) == announced + 2 * offered.count)
        try await x.send(.routeHops(RouteHopsFrame(digest: digest, hops: theirs)))
        try await x.sync(50)
        #expect(x.seen.announces.withLock(\.count) == announced + 2 * offered.count)
        // On another link (Y), hop counts of another table (one origin less): nothing.
        let y = try await AnnounceRelayingTests.Neighbour(address: "Y", network: setup.network)
        defer { Task { await y.stop() } }
        try await waitUntil("R is linked to Y") { await router.peers().count == 3 }
        let fewer = Array(pairs.filter { $0.origin != origins[5] })
        let stale = RouteHopsFrame(
            digest: RouteSummaryFrame(bucketBits: 0, pairs: fewer).hashes[0],
            hops: fewer.map { _ in 9 }
        )
        try await y.sync(60)
        let toY = y.seen.announces.withLock(\.count)
        try await y.send(.routeHops(stale))
        try await y.sync(70)
        #expect(y.seen.announces.withLock(\.count) == toY)
        let stats = await router.stats().routeSummaries
        #expect(stats["hopShortcuts"] == (on ? 4 : nil))
        #expect(stats["hopsRepeated"] == (on ? 1 : nil))
        #expect(stats["hopsStale"] == (on ? 1 : nil))
    }

    /// Twice per neighbour while the node runs: not before its link is up, not a third
    /// time on the same link, nor on a link that comes back (its routes were compared
    /// twice). A neighbour's are taken twice per link.
    @Test func hopCountsGoToEachNeighbourTwice() {
        var timers = SummaryTimers()
        let (a, b) = (PeerID.random(), PeerID.random())
        var answers: [Bool] = []
        answers.append(timers.shareHops(with: a))  // not linked
        timers.linked(a, due: .now)
        answers.append(timers.shareHops(with: a))
        answers.append(timers.shareHops(with: a))
        answers.append(timers.shareHops(with: a))
        timers.lost(a)
        timers.linked(a, due: .now)
        answers.append(timers.shareHops(with: a))  // a link back
        timers.linked(b, due: .now)
        answers.append(timers.shareHops(with: b))
        #expect(answers == [false, true, true, false, false, true])
        var taken = [timers.takeHops(from: a), timers.takeHops(from: a), timers.takeHops(from: a)]
        timers.lost(a)
        taken.append(timers.takeHops(from: a))
        timers.linked(a, due: .now)
        taken.append(timers.takeHops(from: a))
        #expect(taken == [true, true, false, false, true])
        // A neighbour of a table kept across a restart gets none.
        let c = PeerID.random()
        timers.linked(c, due: .now)
        timers.hopsNotNeeded(by: c)
        let sharedWithC = timers.shareHops(with: c)
        #expect(!sharedWithC)
    }
}
