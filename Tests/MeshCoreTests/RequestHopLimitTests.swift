import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing

/// A route request is answered only with a route that reaches the asker within
/// `max_hops`, and goes on toward a next hop only along a route of fewer hops than its
/// remaining hop limit (docs/PROTOCOL.md §A.5, "Route requests", rules 3 and 4); along
/// a longer one it would die before the target, so it is flooded instead.
@Suite struct RequestHopLimitTests {
    /// R (neighbours X, Y, Z) routes to O through Z in 5 hops. A request from X with
    /// hop limit 5 cannot reach O that way: it goes to Y and Z (flooded). With hop
    /// limit 6 it goes to Z alone.
    @Test(.timeLimit(.minutes(3)))
    func aRequestGoesAlongARouteOnlyWhenItsHopLimitReachesTheEnd() async throws {
        let clock = ManualClock()
        let (star, o) = try await Self.routingToOThroughZ(clock: clock)
        let (router, x, y, z) = (star.router, star.x, star.y, star.z)
        defer { Task { await star.stop() } }

        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 11, hopLimit: 5)))
        for (n, nonce) in [(x, UInt64(10)), (y, 20), (z, 30)] { try await n.sync(nonce) }
        let short = RouteRequestFrame(target: o, sequence: 11, hopLimit: 4)
        #expect(z.seen.requests.withLock { $0 } == [short])
        #expect(y.seen.requests.withLock { $0 } == [short])

        clock.advance(by: .seconds(20))  // past the retry interval and the flood hold
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 12, hopLimit: 6)))
        for (n, nonce) in [(x, UInt64(40)), (y, 50), (z, 60)] { try await n.sync(nonce) }
        #expect(z.seen.requests.withLock { $0.last } == RouteRequestFrame(target: o, sequence: 12, hopLimit: 5))
        #expect(y.seen.requests.withLock { $0.count } == 1)
        let stats = await router.stats()
        #expect(stats.routeRequests["flooded", default: 0] == 1)
        #expect(stats.routeRequests["forwarded", default: 0] == 1)
    }

    /// R routes to O through Z in 5 hops (sequence 10). A request from X for any
    /// sequence with hop limit 5 has come `max_hops` − 4 hops: R's route, one hop
    /// further (6), would reach the asker beyond `max_hops`, so R does not answer but
    /// floods the request, asking for sequence 11. With hop limit 6, R answers, with
    /// the solicited flag.
    @Test(.timeLimit(.minutes(3)))
    func aRequestIsAnsweredOnlyWithARouteThatReachesTheAsker() async throws {
        let clock = ManualClock()
        let (star, o) = try await Self.routingToOThroughZ(clock: clock)
        let (router, x, y, z) = (star.router, star.x, star.y, star.z)
        defer { Task { await star.stop() } }
        for (n, nonce) in [(x, UInt64(1)), (y, 2), (z, 3)] { try await n.sync(nonce) }
        let before = x.seen.announces.withLock { $0.filter { $0.origin == o }.count }

        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 0, hopLimit: 5)))
        for (n, nonce) in [(x, UInt64(10)), (y, 20), (z, 30)] { try await n.sync(nonce) }
        let far = x.seen.announces.withLock { $0.filter { $0.origin == o }.dropFirst(before).map(\.hops) }
        #expect(far == [])
        // R holds sequence 10 and cannot answer: what goes on asks for 11, which only O
        // can give (an answer of 10 would stop at every node that holds it).
        let flooded = RouteRequestFrame(target: o, sequence: 11, hopLimit: 4)
        #expect(y.seen.requests.withLock { $0 } == [flooded])
        #expect(z.seen.requests.withLock { $0 } == [flooded])

        clock.advance(by: .seconds(20))  // past the retry interval and the flood hold
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 0, hopLimit: 6)))
        for (n, nonce) in [(x, UInt64(40)), (y, 50), (z, 60)] { try await n.sync(nonce) }
        let near = x.seen.announces.withLock { $0.filter { $0.origin == o }.dropFirst(before).map(\.hops) }
        #expect(near == [6])
        // The answer carries the solicited flag, so relays pass it back toward their
        // requesters only.
        let answer = x.seen.announces.withLock { $0.last { $0.origin == o } }
        #expect(answer?.solicited == true)
        let stats = await router.stats()
        #expect(stats.routeRequests["answered", default: 0] == 1)
        #expect(stats.routeRequests["flooded", default: 0] == 1)
    }

    /// R linked to X, Y and Z, with a route to a new origin O through Z in 5 hops at
    /// sequence 10.
    static func routingToOThroughZ(clock: ManualClock) async throws -> (RouteRequestTests.Setup, PeerID) {
        let star = try await RouteRequestTests.routerWith(["X", "Y", "Z"], clock: clock)
        let (router, z, o) = (star.router, star.z, PeerID.random())
        try await z.send(AnnounceTests.announce(o, 10, hops: 5, signer: TestReceiptSigner(peer: o)))
        try await waitUntil("R routes to O through Z in 5 hops") {
            await router.routes().contains { $0.destination == o && $0.nextHop == z.peer && $0.hops == 5 }
        }
        return (star, o)
    }
}
