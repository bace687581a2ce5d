import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

@testable import MeshCore

/// The solicited flag of ANNOUNCE (docs/PROTOCOL.md §A.2, and §A.5 "Route requests"):
/// its encoding; the pending requesters a relay remembers; and, seen from raw
/// neighbours of a router R, that a new sequence announced because a request asked for
/// it goes back to the neighbours that asked and where it changes R's route, not to a
/// neighbour that did not ask, while an ordinary (periodic) announcement still goes to
/// every neighbour.
@Suite struct SolicitedAnswerTests {
    typealias Neighbour = AnnounceRelayingTests.Neighbour

    static func announce(_ origin: PeerID, _ sequence: UInt64, hops: UInt8, solicited: Bool) -> AnnounceFrame {
        let signer = TestReceiptSigner(peer: origin)
        return AnnounceFrame(
            origin: origin,
            sequence: sequence,
            hops: hops,
            signature: signer.sign(AnnounceFrame.signedBytes(origin: origin, sequence: sequence)),
            solicited: solicited
        )
    }

    @Test func theSolicitedFlagRoundTripsIsUnsignedAndOtherFlagBitsAreIgnored() throws {
        let o = PeerID.random()
        let frame = Self.announce(o, 42, hops: 3, solicited: true)
        let bytes = Frame.announce(frame).encoded()
        #expect(bytes.count == 4 + AnnounceFrame.bodySize)
        #expect(Array(bytes.prefix(4)) == [1, 5, 0x00, 0x01])
        #expect(try Frame.decode(bytes) == .announce(frame))
        #expect(frame.forwarded().solicited && frame.forwarded().hops == 4)
        // Without the flag: header flags 0, body byte for byte the same.
        var plain = frame
        plain.solicited = false
        let plainBytes = Frame.announce(plain).encoded()
        #expect(Array(plainBytes.prefix(4)) == [1, 5, 0, 0])
        #expect(plainBytes.dropFirst(4) == bytes.dropFirst(4))
        #expect(try Frame.decode(plainBytes) == .announce(plain))
        // The signature covers neither the flag nor the hops.
        let verifier = TestReceiptSigner(peer: .random())
        #expect(frame.verify(with: verifier) && plain.verify(with: verifier))
        // Unknown bits are ignored, with or without the solicited one.
        var other = plainBytes
        (other[2], other[3]) = (0x80, 0x02)
        #expect(try Frame.decode(other) == .announce(plain))
        other[3] = 0x03
        #expect(try Frame.decode(other) == .announce(frame))
    }

    /// A pending requester is answered by a sequence at least the one it asked for,
    /// and again only by a copy of that sequence with fewer hops (not by another
    /// sequence); expired entries answer nothing; a
    /// full table records nothing new until entries expire.
    @Test func pendingRequestersAreAnsweredOnceExpireAndAreBounded() {
        var pending = PendingRequesters()
        let (t, n, m) = (PeerID.random(), PeerID.random(), PeerID.random())
        let start = ContinuousClock.Instant.now
        pending.record(t, from: n, sequence: 11, now: start)
        pending.record(t, from: m, sequence: 13, now: start)
        let early = pending.take(t, sequence: 10, hops: 3, now: start)
        let first = pending.take(t, sequence: 12, hops: 5, now: start)
        let again = pending.take(t, sequence: 12, hops: 5, now: start)
        let longer = pending.take(t, sequence: 12, hops: 6, now: start)
        #expect(early.isEmpty && first == [n] && again.isEmpty && longer.isEmpty)
        let shorter = pending.take(t, sequence: 12, hops: 3, now: start)
        let shorterStill = pending.take(t, sequence: 12, hops: 2, now: start + .seconds(1))
        #expect(shorter == [n] && shorterStill == [n])
        // A newer sequence is not a shorter copy: it goes by the ordinary rules.
        #expect(pending.take(t, sequence: 13, hops: 1, now: start) == [m])
        #expect(pending.count == 2)
        // Asking again for a newer one makes n wait for it.
        pending.record(t, from: n, sequence: 14, now: start)
        #expect(pending.take(t, sequence: 13, hops: 1, now: start).isEmpty)
        #expect(pending.take(t, sequence: 14, hops: 4, now: start) == [n])
        let late = pending.take(t, sequence: 14, hops: 1, now: start + PendingRequesters.lifetime)
        #expect(late.isEmpty && pending.count == 0)

        for _ in 0..<PendingRequesters.capacity { pending.record(.random(), from: n, sequence: 1, now: start) }
        let whileFull = pending.record(t, from: n, sequence: 1, now: start + .seconds(1))
        #expect(!whileFull && pending.count == PendingRequesters.capacity)
        let onceExpired = pending.record(t, from: n, sequence: 1, now: start + PendingRequesters.lifetime)
        #expect(onceExpired && pending.count == 1)
    }

    /// What a route summary lists for an origin: the highest sequence of an ordinary
    /// announcement (a repeat, an alternate or a stale copy included), not a solicited
    /// one; the answers the table gives carry the flag while their sequence is above it.
    @Test func summariesListTheSequenceOrdinaryAnnouncementsGave() {
        let (o, a, b) = (PeerID.random(), PeerID.random(), PeerID.random())
        let live = RouteTableTests.Live([a, b])
        let table = RouteTableTests.table(live)
        let now = RouteTableTests.now
        func listed() -> UInt64? { table.highestSequences(now: now).first { $0.origin == o }?.sequence }
        func answer() -> AnnounceFrame? { table.answer(for: o, atLeast: 0, to: b, maxHops: 7, now: now) }

        // Known only from a solicited announcement: its sequence, and answers flagged.
        _ = table.consider(Self.announce(o, 11, hops: 2, solicited: true), from: a, transport: "lo", now: now)
        #expect(listed() == 11 && answer()?.solicited == true)
        // An ordinary, older one (stale here) tells what the mesh was given.
        #expect(
            table.consider(Self.announce(o, 10, hops: 2, solicited: false), from: b, transport: "lo", now: now)
                == .rejected("stale")
        )
        #expect(listed() == 10 && answer()?.solicited == true)
        // The same sequence again without the flag (a repeat from the same neighbour).
        _ = table.consider(Self.announce(o, 11, hops: 2, solicited: false), from: a, transport: "lo", now: now)
        #expect(listed() == 11 && answer()?.solicited == false)
        // A newer solicited one: listed stays, answers flagged again.
        _ = table.consider(Self.announce(o, 12, hops: 2, solicited: true), from: a, transport: "lo", now: now)
        #expect(listed() == 11 && answer()?.sequence == 12 && answer()?.solicited == true)
    }

    /// R has raw neighbours X, Y and Z and a route to O through Z (2 hops) at sequence
    /// 10. X asks for sequence 11; R forwards the request to Z. Z passes on O's
    /// solicited sequence 11: only X, who asked, gets it from R, not Y (R's route only
    /// got newer), and R's route summary lists O at 10 as Y does; Y asking then gets R's
    /// route as a (flagged) answer. O's periodic sequence 12 (no flag) reaches X and Y. A
    /// solicited sequence 13 that moves R's route to Y goes to neither X nor Z; one of
    /// a new origin P, which gives R a route, goes to both. Then X and Z ask for 14
    /// (Z's request a repeat R does not pass on, but remembers): the answer goes back to
    /// both.
    @Test(.timeLimit(.minutes(3))) func aSolicitedSequenceGoesBackToTheAskerNotToANeighbourThatDidNotAsk() async throws
    {
        let clock = ManualClock()
        let star = try await RouteRequestTests.routerWithXYZ(clock: clock)
        let (router, r, x, y, z) = (star.router, star.r, star.x, star.y, star.z)
        defer { Task { await star.stop() } }
        let o = PeerID.random()
        func heard(_ n: Neighbour) -> [[UInt64]] {
            n.seen.announces.withLock {
                $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops), $0.solicited ? 1 : 0] }
            }
        }
        func syncAll(_ nonce: UInt64) async throws {
            for (n, offset) in [(x, UInt64(0)), (y, 2), (z, 4)] { try await n.sync(nonce + offset) }
        }

        try await z.send(.announce(Self.announce(o, 10, hops: 2, solicited: false)))
        try await waitUntil("R has a route to O through Z") {
            await router.routes().contains { $0.destination == o && $0.nextHop == z.peer && $0.sequence == 10 }
        }
        try await syncAll(10)
        #expect(heard(x) == [[10, 3, 0]] && heard(y) == [[10, 3, 0]])

        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 11, hopLimit: 7)))
        try await waitUntil("R forwarded X's request to Z") {
            !z.seen.requests.withLock { $0.isEmpty }
        }
        try await z.send(.announce(Self.announce(o, 11, hops: 2, solicited: true)))
        try await waitUntil("R took sequence 11") {
            await router.routes().contains { $0.destination == o && $0.sequence == 11 }
        }
        try await syncAll(20)
        #expect(heard(x) == [[10, 3, 0], [11, 3, 1]])
        #expect(heard(y) == [[10, 3, 0]], "Y did not ask and its route through R did not change")
        // R's summary lists O at 10, as Y holds it: their tables do not differ.
        let own = try #require(y.seen.announces.withLock { $0.last { $0.origin == r } })
        let pairs: [(origin: PeerID, sequence: UInt64)] = [(o, 10), (r, own.sequence)]
        try await y.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: pairs)))
        try await y.sync(25)
        #expect(y.seen.listings.withLock { $0 }.isEmpty)
        #expect(await router.stats().routeSummaries["matched"] == 1)
        // Y asking now gets R's route as an answer, flagged: R holds 11 only as one.
        try await y.send(.routeRequest(RouteRequestFrame(target: o, sequence: 11, hopLimit: 7)))
        try await y.sync(27)
        #expect(heard(y) == [[10, 3, 0], [11, 3, 1]])

        // The periodic announcement goes everywhere.
        try await z.send(.announce(Self.announce(o, 12, hops: 2, solicited: false)))
        try await syncAll(30)
        #expect(heard(x).last == [12, 3, 0])
        #expect(heard(y) == [[10, 3, 0], [11, 3, 1], [12, 3, 0]])

        // A solicited sequence that moves R's route (to Y, 1 hop) goes nowhere else:
        // X and Z did not ask, and R's route through them was not needed.
        try await y.send(.announce(Self.announce(o, 13, hops: 1, solicited: true)))
        try await waitUntil("R's route to O moved to Y") {
            await router.routes().contains { $0.destination == o && $0.nextHop == y.peer && $0.sequence == 13 }
        }
        try await syncAll(40)
        #expect(heard(x).last == [12, 3, 0])
        #expect(!heard(z).contains { $0[0] == 13 })
        // One that gives R a route where it had none goes to every other neighbour,
        // the flag kept.
        let p = PeerID.random()
        try await y.send(.announce(Self.announce(p, 5, hops: 1, solicited: true)))
        try await syncAll(45)
        let toX = x.seen.announces.withLock {
            $0.filter { $0.origin == p }.map { [$0.sequence, UInt64($0.hops), $0.solicited ? 1 : 0] }
        }
        let toZ = z.seen.announces.withLock {
            $0.filter { $0.origin == p }.map { [$0.sequence, UInt64($0.hops), $0.solicited ? 1 : 0] }
        }
        #expect(toX == [[5, 2, 1]] && toZ == [[5, 2, 1]])

        // Two neighbours ask; R passes one request on (to Y) and remembers both askers.
        clock.advance(by: .seconds(3))
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 14, hopLimit: 7)))
        try await z.send(.routeRequest(RouteRequestFrame(target: o, sequence: 14, hopLimit: 7)))
        try await syncAll(50)
        #expect(y.seen.requests.withLock { $0 } == [RouteRequestFrame(target: o, sequence: 14, hopLimit: 6)])
        try await y.send(.announce(Self.announce(o, 14, hops: 1, solicited: true)))
        try await syncAll(60)
        #expect(heard(x).last == [14, 2, 1])
        #expect(heard(z).last == [14, 2, 1])

        let stats = await router.stats()
        #expect(stats.routeRequests["returned"] == 3)
        #expect(stats.routeRequests["withheld"] == 3)
    }

    /// R has raw neighbours X, Y and Z and a route to O through Z at sequence 10. X asks
    /// for 11; R forwards the request to Z. The answer comes back first by a detour (Z,
    /// 5 hops: R passes it to X at 6), then by a shorter way (Y, 2 hops): R passes that
    /// copy to X too, at 3, and a copy longer again to nobody.
    @Test(.timeLimit(.minutes(3)))
    func aShorterCopyOfTheAnswerFollowsTheFirst() async throws {
        let star = try await RouteRequestTests.routerWith(["X", "Y", "Z"], clock: ManualClock())
        let (router, x, y, z) = (star.router, star.x, star.y, star.z)
        defer { Task { await star.stop() } }
        let o = PeerID.random()
        func heard(_ n: Neighbour) -> [[UInt64]] {
            n.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } }
        }
        try await z.send(.announce(Self.announce(o, 10, hops: 2, solicited: false)))
        try await waitUntil("R has a route to O through Z") {
            await router.routes().contains { $0.destination == o && $0.nextHop == z.peer && $0.sequence == 10 }
        }
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 11, hopLimit: 7)))
        try await waitUntil("R forwarded X's request to Z") {
            !z.seen.requests.withLock { $0.isEmpty }
        }
        try await z.send(.announce(Self.announce(o, 11, hops: 5, solicited: true)))
        try await x.sync(10)
        #expect(heard(x) == [[10, 3], [11, 6]])
        try await y.send(.announce(Self.announce(o, 11, hops: 2, solicited: true)))
        try await waitUntil("R's route to O moved to Y") {
            await router.routes().contains { $0.destination == o && $0.nextHop == y.peer && $0.hops == 2 }
        }
        try await z.send(.announce(Self.announce(o, 11, hops: 4, solicited: true)))
        try await y.sync(15)
        try await z.sync(16)
        try await x.sync(20)
        #expect(heard(x) == [[10, 3], [11, 6], [11, 3]])
        #expect(!heard(z).contains { $0[0] == 11 }, "Z did not ask")
        #expect(await router.stats().routeRequests["returned"] == 2)
    }

    /// R is the target of X's request: its new sequence goes out flagged, and so does
    /// R's answer to a later request for it; a neighbour whose link comes up afterwards
    /// (Y) is given R's latest *unsolicited* announcement, the sequence the rest of the
    /// mesh holds, not the flagged one without its flag (which would cross the whole
    /// mesh from Y on).
    @Test(.timeLimit(.minutes(3))) func theTargetGivesANewNeighbourItsUnsolicitedSequence() async throws {
        let network = LoopbackNetwork()
        let (router, r, run) = try await RouteRequestTests.router(network: network, clock: ManualClock())
        let x = try await Neighbour(address: "X", network: network)
        defer {
            run.cancel()
            Task { await x.stop() }
        }
        try await waitUntil("R is linked to X") { await router.peers().count == 1 }
        func heard(_ n: Neighbour) -> [[UInt64]] {
            n.seen.announces.withLock { $0.filter { $0.origin == r }.map { [$0.sequence, $0.solicited ? 1 : 0] } }
        }
        try await x.sync(10)
        let first = try #require(heard(x).first?.first)
        #expect(heard(x) == [[first, 0]])

        try await x.send(.routeRequest(RouteRequestFrame(target: r, sequence: first + 1, hopLimit: 7)))
        try await x.sync(20)
        #expect(heard(x) == [[first, 0], [first + 1, 1]])
        try await x.send(.routeRequest(RouteRequestFrame(target: r, sequence: first + 1, hopLimit: 7)))
        try await x.sync(30)
        #expect(heard(x) == [[first, 0], [first + 1, 1], [first + 1, 1]], "an answer keeps the flag")

        let y = try await Neighbour(address: "Y", network: network)
        defer { Task { await y.stop() } }
        try await waitUntil("R is linked to Y") { await router.peers().count == 2 }
        try await y.sync(40)
        #expect(heard(y) == [[first, 0]])
    }

    /// docs/PROTOCOL.md §A.5, "Restarting": R keeps its announcement state in a store.
    /// Its first run announces 1001 and, asked, 1002 (solicited); restarted with a
    /// start below both, it gives a new neighbour 1001 again (the sequence the mesh
    /// holds, not a new one), and asked for more it announces 1003, above anything it
    /// announced before. Without the store the restart would announce 501.
    @Test(.timeLimit(.minutes(3))) func aRestartedRouterRepeatsTheSequenceTheMeshHolds() async throws {
        let network = LoopbackNetwork()
        let store = InMemoryAnnounceStateStore()
        let r = PeerID.random()
        func heard(_ n: Neighbour) -> [[UInt64]] {
            n.seen.announces.withLock { $0.filter { $0.origin == r }.map { [$0.sequence, $0.solicited ? 1 : 0] } }
        }
        var routing = RoutingConfiguration()
        routing.firstSequence = 1000
        let (first, _, firstRun) = try await RouteRequestTests.router(
            network: network,
            clock: ManualClock(),
            routing: routing,
            r: r,
            announceState: store
        )
        let x = try await Neighbour(address: "X", network: network)
        try await waitUntil("R is linked to X") { await first.peers().count == 1 }
        try await x.sync(10)
        try await x.send(.routeRequest(RouteRequestFrame(target: r, sequence: 1002, hopLimit: 7)))
        try await x.sync(20)
        #expect(heard(x) == [[1001, 0], [1002, 1]])
        try await waitUntil("R saved its state") {
            store.saved == AnnounceState(unsolicited: 1001, latest: 1002)
        }
        await first.shutdown()
        _ = await firstRun.result
        await x.stop()

        routing.firstSequence = 500
        let (second, _, secondRun) = try await RouteRequestTests.router(
            network: network,
            clock: ManualClock(),
            routing: routing,
            r: r,
            announceState: store
        )
        let y = try await Neighbour(address: "Y", network: network)
        defer {
            secondRun.cancel()
            Task { await y.stop() }
        }
        try await waitUntil("the restarted R is linked to Y") { await second.peers().count == 1 }
        try await y.sync(30)
        #expect(heard(y) == [[1001, 0]])
        try await y.send(.routeRequest(RouteRequestFrame(target: r, sequence: 1002, hopLimit: 7)))
        try await y.sync(40)
        #expect(heard(y) == [[1001, 0], [1003, 1]])
        try await waitUntil("R saved its new state") {
            store.saved == AnnounceState(unsolicited: 1001, latest: 1003)
        }
    }

    /// Routers N0…N5 in a line, N5 also linked to N1 (a ring N1…N5 with N0 a side
    /// branch of N1), refreshes an hour apart. Cut N2–N3: N2 is starved of a route to
    /// N4 (as N1 of one to N3 in
    /// `RouteRequestTests.aStarvedNodeGetsARouteFromItsDestinationsNewSequence`) and its
    /// message makes it ask; the request goes N1 → N5 → N4, whose new sequence comes
    /// back N5 → N1 → N2 and the message arrives. N0, which did not ask and whose route
    /// through N1 does not change, keeps the older sequence.
    @Test(.timeLimit(.minutes(3))) func theAnswerToARequestDoesNotReachASideBranchThatDidNotAsk() async throws {
        let routing = RoutingConfiguration(announceInterval: .seconds(3600), routeMaxAge: .seconds(7200))
        let mesh = await RouterGraph.line(count: 6, routing: routing)
        defer { Task { await mesh.stop() } }
        await mesh[5].connect(to: PeerHint(transport: "lo", address: RouterGraph.address(1)))
        try await mesh.waitForLinks()
        try await mesh.waitUntil("N5 is linked to N1") {
            await mesh[5].peers().contains { $0.peer == mesh[1].localPeerID }
        }
        try await mesh.waitForRoute(from: 2, to: 4, hops: 2)
        try await mesh.waitForRoute(from: 1, to: 4, hops: 2)
        try await mesh.waitForRoute(from: 0, to: 4, hops: 3)
        let target = mesh[4].localPeerID
        func sequence(at index: Int) async -> UInt64? {
            await mesh[index].routes().first { $0.destination == target }?.sequence
        }
        let old = try #require(await sequence(at: 0))

        mesh.network.partition(RouterGraph.address(2), RouterGraph.address(3))
        try await mesh.waitUntil("N2's route to N4 is gone") {
            await !mesh[2].routes().contains { $0.destination == target }
        }
        let id = try await mesh[2].send(to: target, payload: [42])
        #expect(try await mesh[2].waitForStatus(of: id, until: .delivered, timeout: .seconds(60)).status == .delivered)
        #expect(mesh.received(at: 4).map(\.id) == [id])
        let answer = try #require(await sequence(at: 2))
        #expect(answer > old)
        #expect(await sequence(at: 1) == answer)
        #expect(await sequence(at: 0) == old)
        #expect(await mesh[4].stats().routeRequests["reannounced", default: 0] >= 1)
        #expect(await mesh[1].stats().routeRequests["withheld", default: 0] >= 1)
    }
}
