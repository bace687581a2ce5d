import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Summary digests (docs/PROTOCOL.md §A.5): the periodic and link-up summary is one
/// hash of the whole table (9 bytes however large the table); a digest that matches is
/// left unanswered, one that differs is answered with the full summary, whose differing
/// buckets the neighbour then lists.
@Suite struct SummaryDigestTests {
    /// Z announces six origins to R (seven pairs with R itself: two buckets). The next
    /// summary X gets is a digest of them; X's matching digest is left unanswered; X's
    /// digest lacking one origin gets R's full summary back, not a listing, and R's next
    /// summary to X comes within one interval.
    @Test(.timeLimit(.minutes(3)))
    func periodicSummariesAreDigestsAndADifferingDigestGetsTheFullSummary() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWith(["X", "Z"], clock: clock)
        defer { Task { await setup.stop() } }
        let (router, r, x, z) = (setup.router, setup.r, setup.x, setup.z)
        let origins = (0..<6).map { _ in PeerID.random() }
        for origin in origins {
            try await z.send(AnnounceTests.announce(origin, 10, hops: 2, signer: TestReceiptSigner(peer: origin)))
        }
        try await waitUntil("R has routes to the six") { await router.routes().count == 8 }
        try await x.sync(10)
        let own = try #require(x.seen.announces.withLock { $0.last { $0.origin == r } })
        let pairs = [(origin: r, sequence: own.sequence)] + origins.map { (origin: $0, sequence: UInt64(10)) }
        #expect(RouteSummaryFrame.bucketBits(for: pairs.count) == 1)
        let linkUp = x.seen.summaries.withLock(\.count)

        // New routes: the next summary within one interval (60 s ± 25 %).
        clock.advance(by: .seconds(76))
        try await waitUntil("X got a periodic summary") {
            x.seen.summaries.withLock(\.count) == linkUp + 1
        }
        let lastSummary = x.seen.summaries.withLock(\.last)
        let periodic = try #require(lastSummary)
        #expect(periodic == RouteSummaryFrame(bucketBits: 0, pairs: pairs))
        #expect(Frame.routeSummary(periodic).encoded().count == 13)

        try await x.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs)))
        try await x.sync(20)
        let (summaries, listed) = (x.seen.summaries.withLock(\.count), x.seen.listings.withLock(\.count))
        #expect(summaries == linkUp + 1 && listed == 0)
        #expect(await router.stats().routeSummaries["matched"] == 1)

        try await x.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs.dropLast())))
        try await x.sync(30)
        let (answer, listings) = (x.seen.summaries.withLock(\.last), x.seen.listings.withLock(\.count))
        #expect(answer == RouteSummaryFrame(bucketBits: 1, pairs: pairs))
        #expect(listings == 0)
        #expect(await router.stats().routeSummaries["expanded"] == 1)
        // The tables differ: R's next summary to X within one interval.
        clock.advance(by: .seconds(76))
        try await waitUntil("X got the next summary within one interval") {
            x.seen.summaries.withLock(\.count) == linkUp + 3
        }
    }

    /// R knows six origins through Z (seven pairs with itself: two buckets). A new
    /// neighbour W gets a digest when its link comes up, not the full summary; W's
    /// matching digest is left unanswered, a differing one gets the full summary.
    @Test(.timeLimit(.minutes(3)))
    func theLinkUpSummaryIsADigest() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWith(["X", "Z"], clock: clock)
        defer { Task { await setup.stop() } }
        let (router, r, z) = (setup.router, setup.r, setup.z)
        let origins = (0..<6).map { _ in PeerID.random() }
        for origin in origins {
            try await z.send(AnnounceTests.announce(origin, 10, hops: 2, signer: TestReceiptSigner(peer: origin)))
        }
        try await waitUntil("R has routes to the six") { await router.routes().count == 8 }

        let w = try await AnnounceRelayingTests.Neighbour(address: "W", network: setup.network)
        defer { Task { await w.stop() } }
        try await waitUntil("R is linked to W") { await router.peers().count == 3 }
        try await w.sync(10)
        let own = try #require(w.seen.announces.withLock { $0.last { $0.origin == r } })
        let pairs = [(origin: r, sequence: own.sequence)] + origins.map { (origin: $0, sequence: UInt64(10)) }
        #expect(RouteSummaryFrame.bucketBits(for: pairs.count) == 1)
        #expect(w.seen.summaries.withLock { $0 } == [RouteSummaryFrame(bucketBits: 0, pairs: pairs)])

        try await w.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs)))
        try await w.sync(20)
        #expect(w.seen.summaries.withLock(\.count) == 1 && w.seen.listings.withLock(\.count) == 0)
        try await w.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs.dropLast())))
        try await w.sync(30)
        #expect(w.seen.summaries.withLock(\.last) == RouteSummaryFrame(bucketBits: 1, pairs: pairs))
        #expect(w.seen.summaries.withLock(\.count) == 2)
    }
}
