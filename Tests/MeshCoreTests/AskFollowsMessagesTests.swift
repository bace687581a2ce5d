import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// A node asks for a route only while a message for the destination waits in its
/// queue (docs/PROTOCOL.md §A.5, "Route requests", *Asking*): asking stops once the
/// message expired, and a flood copy that is only passed on asks nothing. With
/// `asksFollowMessages` off: asking goes on, and every flood copy asks.
@Suite struct AskFollowsMessagesTests {
    /// R's message for O (no route anywhere) expires after 5 s: R asks at 0 and 2 s;
    /// the ask due at 6 s finds nothing waiting, and R stops (off: it asks on).
    @Test(.timeLimit(.minutes(1)), arguments: [true, false])
    func askingStopsOnceNothingWaits(follow: Bool) async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWith(
            ["X", "Z"], clock: clock, routing: RoutingConfiguration(asksFollowMessages: follow))
        defer { Task { await setup.stop() } }
        let (router, x) = (setup.router, setup.x)
        let o = PeerID.random()
        let id = try await router.send(to: o, payload: [1], options: SendOptions(expiresAfter: .seconds(5)))
        try await AnnounceRelayingTests.waitUntil("R asked X") { x.seen.requests.withLock { $0.count } == 1 }
        clock.advance(by: .seconds(2))
        try await AnnounceRelayingTests.waitUntil("R asked again after 2 s") { x.seen.requests.withLock { $0.count } == 2 }

        clock.advance(by: .seconds(4))  // 6 s: the message expired at 5 s
        if follow {
            try await AnnounceRelayingTests.waitUntil("R found nothing waiting for O") {
                await router.stats().routeRequests["unwanted"] == 1
            }
            #expect(router.routeDiagnosis(for: o, name: { _ in "" }).hasPrefix("asking: no"))
        } else {
            try await AnnounceRelayingTests.waitUntil("R asked a third time") { x.seen.requests.withLock { $0.count } == 3 }
        }
        clock.advance(by: .seconds(8))
        try await x.sync(10)
        #expect(x.seen.requests.withLock { $0.count } == (follow ? 2 : 4))
        // Looking for it marked it expired; off, nothing looked at it (it waits for a
        // route, and nothing lists it before one appears).
        #expect(await router.status(of: id)?.status == (follow ? .expired : .queued))
    }

    /// X floods R a copy of a message for T, whom R has no route to. R passes it on to
    /// Y after its flood delay and lets it go (custody stayed with X): it asks nobody
    /// for a route to T (off: it asks X and Y).
    @Test(.timeLimit(.minutes(1)), arguments: [true, false])
    func aFloodCopyPassedOnAsksNothing(follow: Bool) async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        let (router, run) = try await RelayRulesTests.relay(
            .random(), network: network, queue: InMemoryOutboundQueue(clock: clock),
            configuration: RouterConfiguration(
                escalation: EscalationConfiguration(ackTimeoutMin: .seconds(30), ackTimeoutMax: .seconds(60)), keepaliveInterval: .seconds(600),
                routing: RoutingConfiguration(asksFollowMessages: follow),
                flood: FloodConfiguration(enabled: true, maxDelay: .seconds(10))),
            clock: clock, random: FloodCustodyTests.HalfRandom())
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
        if follow {
            #expect(diagnosis.hasPrefix("asking: no"), "\(diagnosis)")
            #expect(await router.stats().routeRequests["asked"] == nil)
        } else {
            #expect(!diagnosis.hasPrefix("asking: no"), "\(diagnosis)")
            try await eventually("R asked for a route to T") { await router.stats().routeRequests["asked", default: 0] >= 1 }
        }
    }
}
