import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// A node asks for a route only while a message for the destination waits in its
/// queue (docs/PROTOCOL.md §A.5, "Route requests", *Asking*): asking stops once the
/// message expired, and a flood copy that is only passed on asks nothing.
@Suite struct AskFollowsMessagesTests {
    /// R's message for O (no route anywhere) expires after 5 s: R asks at 0 and 2 s;
    /// the ask due at 6 s finds nothing waiting, and R stops.
    @Test(.timeLimit(.minutes(3)))
    func askingStopsOnceNothingWaits() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWith(["X", "Z"], clock: clock)
        defer { Task { await setup.stop() } }
        let (router, x) = (setup.router, setup.x)
        let o = PeerID.random()
        let id = try await router.send(to: o, payload: [1], options: SendOptions(expiresAfter: .seconds(5)))
        try await waitUntil("R asked X") { x.seen.requests.withLock { $0.count } == 1 }
        clock.advance(by: .seconds(2))
        try await waitUntil("R asked again after 2 s") {
            x.seen.requests.withLock { $0.count } == 2
        }

        clock.advance(by: .seconds(4))  // 6 s: the message expired at 5 s
        try await waitUntil("R found nothing waiting for O") {
            await router.stats().routeRequests["unwanted"] == 1
        }
        #expect(router.routeDiagnosis(for: o, name: { _ in "" }).hasPrefix("asking: no"))
        clock.advance(by: .seconds(8))
        try await x.sync(10)
        #expect(x.seen.requests.withLock { $0.count } == 2)
        // Looking for it marked it expired.
        #expect(await router.status(of: id)?.status == .expired)
    }

    /// R's message for O waits (no route anywhere): R asks 16 times at the short waits
    /// (2, 4, … 64 s apart, ≈ 12 minutes), then every 300 s while the message waits,
    /// rather than leaving it to O's next periodic announcement (up to an hour away);
    /// the answer to a slow ask (X announces O) ends the asking.
    @Test(.timeLimit(.minutes(3)))
    func aWaitingMessageIsAskedForEveryFiveMinutesAfterTheFastAsks() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWith(["X", "Z"], clock: clock)
        defer { Task { await setup.stop() } }
        let (router, x) = (setup.router, setup.x)
        let o = PeerID.random()
        _ = try await router.send(to: o, payload: [1])
        let asked = { x.seen.requests.withLock { $0.count } }
        try await waitUntil("R asked X") { asked() == 1 }
        let fastWaits = [2, 4, 8, 16, 32] + Array(repeating: 64, count: 10)
        for (ask, wait) in zip(2...16, fastWaits) {
            clock.advance(by: .seconds(wait))
            try await waitUntil("ask \(ask)") { asked() == ask }
        }

        clock.advance(by: .seconds(299))
        try await x.sync(10)
        #expect(asked() == 16, "no ask within 300 s of the 16th")
        clock.advance(by: .seconds(1))
        try await waitUntil("the first slow ask") { asked() == 17 }
        clock.advance(by: .seconds(300))
        try await waitUntil("the second slow ask") { asked() == 18 }
        #expect(router.routeDiagnosis(for: o, name: { _ in "" }).hasPrefix("asking: 18 asks, next in 300"))
        #expect(x.seen.requests.withLock { $0.last?.target } == o)

        try await x.send(AnnounceTests.announce(o, 11, hops: 1, signer: TestReceiptSigner(peer: o)))
        try await waitUntil("R routes to O through X") {
            await router.routes().contains { $0.destination == o && $0.nextHop == x.peer }
        }
        #expect(router.routeDiagnosis(for: o, name: { _ in "" }).hasPrefix("asking: no"))
        clock.advance(by: .seconds(300))
        try await x.sync(20)
        #expect(asked() == 18)
    }

    /// X floods R a copy of a message for T, whom R has no route to. R passes it on to
    /// Y after its flood delay and lets it go (custody stayed with X): it asks nobody
    /// for a route to T.
    @Test(.timeLimit(.minutes(3)))
    func aFloodCopyPassedOnAsksNothing() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        let (router, run) = try await FloodCustodyTests.floodRelay(
            network: network,
            clock: clock,
            queue: InMemoryOutboundQueue(clock: clock)
        )
        defer { run.cancel() }
        let (x, y, o, t) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await RelayRulesTests.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await RelayRulesTests.rawPeer(y, address: "Y", network: network)
        var (peerX, peerY) = (rawX, rawY)
        defer {
            Task {
                await runningX.stop()
                await runningY.stop()
            }
        }
        try await eventually("R is linked to X and Y") { await router.peers().count == 2 }

        let id = MessageID.random()
        try await peerX.send(RelayRulesTests.data(1, id, origin: o, destination: t, flags: FloodCustodyTests.flood))
        #expect(try #require(try await peerX.receiveAck()).cumulative == 1)
        clock.advance(by: .seconds(6))  // past the flood delay (5 s)
        let copy = try await FloodCustodyTests.nextData(id, &peerY)
        #expect(copy.flags & DataFrame.floodFlag != 0)
        try await peerY.send(.ack(AckFrame(cumulative: copy.sequence)))
        try await eventually("R passed it on") { await router.status(of: id)?.status == .relayed }

        let diagnosis = router.routeDiagnosis(for: t, name: { _ in "" })
        #expect(diagnosis.hasPrefix("asking: no"), "\(diagnosis)")
        #expect(await router.stats().routeRequests["asked"] == nil)
    }
}
