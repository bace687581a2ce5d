import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// How a new sequence of an origin is passed on (docs/PROTOCOL.md §A.5,
/// "Re-announcing"). It is left out for a neighbour that routes to the origin on its
/// own: one that advertised the previous sequence to this node at no more hops than
/// this node would offer it has a path that does not lead through here, and the new
/// sequence reaches it along that path. And a copy that came by a longer way than the
/// route it replaces is held back a moment for the copy from the shorter way. Before,
/// every origin's periodic refresh crossed almost every link of the mesh, often several
/// times (first by a detour, then by each shorter way in turn).
@Suite struct NewSequenceRelayingTests {
    /// R is linked to P, S, C and Q. P offers O at sequence 10 in 2 hops (R's route); S
    /// advertises it in 3 (as far from O as R: R's offer of 3 would be infeasible
    /// there), C in 4 (one hop farther than R: R's offer is an alternate of equal
    /// length there), Q nothing. P's refresh at sequence 11 goes on to C and Q, not to
    /// S. With `skipIndependentNeighbours` off, S gets it too.
    @Test(.timeLimit(.minutes(1)), arguments: [true, false])
    func aNewSequenceSkipsTheNeighbourThatRoutesOnItsOwn(skip: Bool) async throws {
        let clock = ManualClock()
        var routing = RoutingConfiguration()
        routing.skipIndependentNeighbours = skip
        let setup = try await RouteRequestTests.routerWith(["P", "S", "C", "Q"], clock: clock, routing: routing)
        defer { Task { await setup.stop() } }
        let router = setup.router
        let (p, s, c, q) = (setup.neighbours[0], setup.neighbours[1], setup.neighbours[2], setup.neighbours[3])

        let o = PeerID.random()
        let signer = TestReceiptSigner(peer: o)
        try await p.send(AnnounceTests.announce(o, 10, hops: 2, signer: signer))
        try await AnnounceRelayingTests.waitUntil("R routes to O through P") {
            await router.routes().contains { $0.destination == o && $0.nextHop == p.peer }
        }
        for (n, nonce) in [(s, UInt64(10)), (c, 20), (q, 30)] { try await n.sync(nonce) }
        try await s.send(AnnounceTests.announce(o, 10, hops: 3, signer: signer))
        try await c.send(AnnounceTests.announce(o, 10, hops: 4, signer: signer))
        try await s.sync(40)
        try await c.sync(50)

        try await p.send(AnnounceTests.announce(o, 11, hops: 2, signer: signer))
        try await AnnounceRelayingTests.waitUntil("R took the refresh") {
            await router.routes().contains { $0.destination == o && $0.sequence == 11 }
        }
        for (n, nonce) in [(s, UInt64(60)), (c, 70), (q, 80), (p, 90)] { try await n.sync(nonce) }

        func sent(to neighbour: AnnounceRelayingTests.Neighbour) -> [[UInt64]] {
            neighbour.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } }
        }
        #expect(sent(to: s) == (skip ? [[10, 3]] : [[10, 3], [11, 3]]))
        #expect(sent(to: c) == [[10, 3], [11, 3]])
        #expect(sent(to: q) == [[10, 3], [11, 3]])
        #expect(sent(to: p).isEmpty, "split horizon")
        #expect(await router.stats().announcesSkipped == (skip ? 1 : 0))
    }

    /// R routes to O through P (sequence 10, 2 hops). S brings sequence 11 first, in 5
    /// hops: R takes it (a newer sequence), but holds its copy for Q back; P's copy of 11
    /// in 2 hops comes before the hold ends and is the only one Q gets. Then S brings 12
    /// in 5 hops and nothing shorter follows: Q gets it when the hold (1 s) is over.
    /// With the hold at zero, Q gets every copy at once.
    @Test(.timeLimit(.minutes(1)), arguments: [true, false])
    func aNewSequenceByADetourWaitsForTheShorterCopy(hold: Bool) async throws {
        let clock = ManualClock()
        var routing = RoutingConfiguration()
        if !hold { routing.newSequenceHold = .zero }
        let setup = try await RouteRequestTests.routerWith(["P", "S", "Q"], clock: clock, routing: routing)
        defer { Task { await setup.stop() } }
        let router = setup.router
        let (p, s, q) = (setup.neighbours[0], setup.neighbours[1], setup.neighbours[2])

        let o = PeerID.random()
        let signer = TestReceiptSigner(peer: o)
        func toQ() -> [[UInt64]] {
            q.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } }
        }
        try await p.send(AnnounceTests.announce(o, 10, hops: 2, signer: signer))
        try await AnnounceRelayingTests.waitUntil("R routes to O through P") {
            await router.routes().contains { $0.destination == o && $0.nextHop == p.peer }
        }
        try await q.sync(10)

        try await s.send(AnnounceTests.announce(o, 11, hops: 5, signer: signer))
        try await AnnounceRelayingTests.waitUntil("R took S's copy of 11") {
            await router.routes().contains { $0.destination == o && $0.sequence == 11 }
        }
        try await q.sync(20)
        #expect(toQ() == (hold ? [[10, 3]] : [[10, 3], [11, 6]]))
        try await p.send(AnnounceTests.announce(o, 11, hops: 2, signer: signer))
        try await AnnounceRelayingTests.waitUntil("R routes to O through P at 11") {
            await router.routes().contains { $0.destination == o && $0.nextHop == p.peer && $0.sequence == 11 }
        }
        try await q.sync(30)
        #expect(toQ() == (hold ? [[10, 3], [11, 3]] : [[10, 3], [11, 6], [11, 3]]))

        try await s.send(AnnounceTests.announce(o, 12, hops: 5, signer: signer))
        try await AnnounceRelayingTests.waitUntil("R took S's copy of 12") {
            await router.routes().contains { $0.destination == o && $0.sequence == 12 }
        }
        try await q.sync(40)
        #expect(toQ().count == (hold ? 2 : 4))
        clock.advance(by: .seconds(1))
        try await AnnounceRelayingTests.waitUntil("Q got 12") { toQ().last == [12, 6] }
        #expect(toQ() == (hold ? [[10, 3], [11, 3], [12, 6]] : [[10, 3], [11, 6], [11, 3], [12, 6]]))
    }
}

