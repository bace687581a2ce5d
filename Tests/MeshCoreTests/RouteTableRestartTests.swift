import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// The route table kept across a restart (docs/PROTOCOL.md §A.5, "Restarting"): a
/// restarted router starts with the routes it had, dormant until their neighbours link
/// again, instead of an empty table its neighbours refill route by route.
@Suite struct RouteTableRestartTests {
    typealias Neighbour = AnnounceRelayingTests.Neighbour

    /// R routes to O through Z (2 hops, sequence 10) and stops. Restarted with its
    /// table kept, R routes to O through Z again as soon as Z links, with nothing sent
    /// of O since, and lists O in the summary a new neighbour W gets; it sends its hop
    /// counts to W but not to Z; its routes age on the clock while it is down, so after
    /// longer than the route maximum age it has none. Without a store the restarted R
    /// knows nothing of O, and Z is a new neighbour like W.
    @Test(.timeLimit(.minutes(3)), arguments: [true, false])
    func aRestartedRouterUsesTheRoutesItHadOnceTheirNeighboursLink(kept: Bool) async throws {
        let clock = ManualClock()
        let network = LoopbackNetwork()
        let store = InMemoryRouteTableStore(clock: clock)
        let (r, o, zPeer) = (PeerID.random(), PeerID.random(), PeerID.random())
        let (first, _, firstRun) = try await RouteRequestTests.router(
            network: network,
            clock: clock,
            r: r,
            savedRoutes: store
        )
        let z = try await Neighbour(address: "Z", network: network, peer: zPeer)
        try await waitUntil("R is linked to Z") { await first.peers().count == 1 }
        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: TestReceiptSigner(peer: o)))
        try await waitUntil("R routes to O through Z") {
            await first.routes().contains { $0.destination == o && $0.nextHop == zPeer }
        }
        await first.shutdown()
        _ = await firstRun.result
        await z.stop()
        #expect(store.savedCount == 1)

        clock.advance(by: .seconds(45))
        let (second, _, secondRun) = try await RouteRequestTests.router(
            network: network,
            clock: clock,
            r: r,
            savedRoutes: kept ? store : nil
        )
        let again = try await Neighbour(address: "Z", network: network, peer: zPeer)
        let w = try await Neighbour(address: "W", network: network)
        try await waitUntil("the restarted R is linked to Z and W") {
            await second.peers().count == 2
        }
        try await again.sync(10)
        try await w.sync(20)
        let route = await second.routes().first { $0.destination == o }
        let listed = w.seen.summaries.withLock { $0.first }
        let own = try #require(w.seen.announces.withLock { $0.last { $0.origin == r } })
        let pairs: [(origin: PeerID, sequence: UInt64)] = (kept ? [(o, UInt64(10))] : []) + [(r, own.sequence)]
        if kept {
            #expect(route?.nextHop == zPeer && route?.hops == 2 && route?.sequence == 10)
            #expect(listed == RouteSummaryFrame(bucketBits: 0, pairs: pairs))
        } else {
            #expect(route == nil)
        }
        // Hop counts: none to Z, whose routes the kept table holds (compared before the
        // restart); W, new, gets them. Without the table Z is new too.
        for neighbour in [again, w] {
            try await neighbour.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs)))
        }
        try await again.sync(40)
        try await w.sync(50)
        #expect(again.seen.hops.withLock(\.count) == (kept ? 0 : 1))
        #expect(w.seen.hops.withLock(\.count) == 1)
        await second.shutdown()
        _ = await secondRun.result
        for neighbour in [again, w] { await neighbour.stop() }

        // Down for longer than the route maximum age (12,000 s): nothing comes back.
        clock.advance(by: .seconds(12_000))
        let (third, _, thirdRun) = try await RouteRequestTests.router(
            network: network,
            clock: clock,
            r: r,
            savedRoutes: store
        )
        let last = try await Neighbour(address: "Z", network: network, peer: zPeer)
        defer {
            thirdRun.cancel()
            Task { await last.stop() }
        }
        try await waitUntil("R is linked to Z once more") { await third.peers().count == 1 }
        try await last.sync(30)
        #expect(await !third.routes().contains { $0.destination == o })
    }
}
