import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Asking for a route of one neighbour at a time (docs/PROTOCOL.md §A.5, "Route
/// requests", *Asking*): a node starved of a usable route asks the live neighbour whose
/// advertisement of the target ranks first, then the next at the next ask, round the
/// ranking, with every third ask to every neighbour; a neighbour that advertises
/// nothing of the target is asked only then.
@Suite struct FocusedAskTests {
    /// R, linked to X, Y, Z and W, routes to O through Z (2 hops, sequence 10); X and Y
    /// advertise O at the same sequence in 3 and 4 hops, infeasible once Z's route is
    /// R's; W advertises nothing of O. Z goes: R is starved. A message for O makes R
    /// ask X (the better advertisement), 2 s later Y, 4 s later everyone (X, Y and W),
    /// 8 s later X again.
    @Test(.timeLimit(.minutes(3)))
    func aStarvedNodeAsksTheNeighboursThatAdvertiseTheTargetOneAtATime() async throws {
        let clock = ManualClock()
        let routing = RoutingConfiguration()
        let setup = try await RouteRequestTests.routerWith(["X", "Y", "Z", "W"], clock: clock, routing: routing)
        defer { Task { await setup.stop() } }
        let router = setup.router
        let (x, y, z, w) = (setup.neighbours[0], setup.neighbours[1], setup.neighbours[2], setup.neighbours[3])

        let o = PeerID.random()
        let signer = TestReceiptSigner(peer: o)
        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: signer))
        try await waitUntil("R routes to O through Z") {
            await router.routes().contains { $0.destination == o && $0.nextHop == z.peer }
        }
        try await y.send(AnnounceTests.announce(o, 10, hops: 4, signer: signer))
        try await x.send(AnnounceTests.announce(o, 10, hops: 3, signer: signer))
        try await x.sync(10)
        try await y.sync(20)
        await z.stop()
        try await waitUntil("R lost Z") { await router.peers().count == 3 }
        #expect(await !router.routes().contains { $0.destination == o }, "the alternates are infeasible: R is starved")

        _ = try await router.send(to: o, payload: [1, 2, 3])
        let request = RouteRequestFrame(target: o, sequence: 11, hopLimit: routing.maxHops)
        let asked = {
            [x.seen.requests.withLock(\.count), y.seen.requests.withLock(\.count), w.seen.requests.withLock(\.count)]
        }
        try await waitUntil("R asked") { x.seen.requests.withLock(\.count) == 1 }
        for (n, nonce) in [(x, UInt64(30)), (y, 40), (w, 50)] { try await n.sync(nonce) }
        #expect(asked() == [1, 0, 0])
        #expect(x.seen.requests.withLock { $0.first } == request)

        clock.advance(by: .seconds(2))
        try await waitUntil("R asked again after 2 s") { asked().reduce(0, +) == 2 }
        for (n, nonce) in [(x, UInt64(60)), (y, 70), (w, 80)] { try await n.sync(nonce) }
        #expect(asked() == [1, 1, 0])

        clock.advance(by: .seconds(4))
        try await waitUntil("R asked again after 4 s more") { asked().reduce(0, +) == 5 }
        for (n, nonce) in [(x, UInt64(90)), (y, 100), (w, 110)] { try await n.sync(nonce) }
        #expect(asked() == [2, 2, 1])

        clock.advance(by: .seconds(8))
        try await waitUntil("R asked again after 8 s more") { asked().reduce(0, +) == 6 }
        for (n, nonce) in [(x, UInt64(120)), (y, 130), (w, 140)] { try await n.sync(nonce) }
        #expect(asked() == [3, 2, 1])
        let stats = await router.stats()
        #expect(stats.routeRequests["asked"] == 4)
        #expect(stats.routeRequests["askedOne"] == 3)
    }
}
