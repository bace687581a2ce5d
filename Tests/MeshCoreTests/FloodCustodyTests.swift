import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// A flood copy that also carries a hop's custody (§A.9): relay R holds a flood copy
/// from X, then X's ordinary copy of the same message arrives and is acknowledged as a
/// duplicate of it, so R's copy now carries X's custody (R's flood delay is 5 s on a
/// manual clock, so it waits until R learns a route or the test advances the clock). R must hand it on as an
/// ordinary copy (the next hop then applies the custody rules of §A.6), never as a
/// flood copy that a next hop holding the flood already would acknowledge as a
/// duplicate — that let the last custody go in the simulator and lost messages — and
/// with the TTL the custody came with: with what the flood left of its own, the copy
/// ran out of TTL on a long route in the simulator, and was refused for ever.
@Suite struct FloodCustodyTests {
    /// Always the same draw: the flood delay is `maxDelay × 0.5`.
    struct HalfRandom: MeshRandom {
        func unit() -> Double { 0.5 }
    }

    static let flood = DataFrame.sealedFlag | DataFrame.floodFlag

    /// A relay R with flooding on (a 5 s flood delay under ``HalfRandom``), long ack
    /// timeouts and keepalives, on `clock`, for raw neighbours to flood.
    static func floodRelay(
        network: LoopbackNetwork,
        clock: ManualClock,
        queue: InMemoryOutboundQueue = InMemoryOutboundQueue()
    ) async throws -> (Router, Task<Void, any Error>) {
        try await RelayRulesTests.relay(
            .random(),
            network: network,
            queue: queue,
            configuration: RouterConfiguration(
                escalation: EscalationConfiguration(ackTimeoutMin: .seconds(30), ackTimeoutMax: .seconds(60)),
                keepaliveInterval: .seconds(600),
                flood: FloodConfiguration(enabled: true, maxDelay: .seconds(10))
            ),
            clock: clock,
            random: HalfRandom()
        )
    }

    /// The next DATA frame of message `id` that `peer` receives.
    static func nextData(_ id: MessageID, _ peer: inout RawPeer) async throws -> DataFrame {
        let frame = try await peer.next { frame -> DataFrame? in
            if case .data(let data) = frame, data.messageID == id { return data }
            return nil
        }
        return try #require(frame)
    }

    @Test(.timeLimit(.minutes(3))) func aFloodCopyCarryingCustodyGoesOnAsAnOrdinaryCopy() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        let (router, run) = try await Self.floodRelay(network: network, clock: clock)
        defer { run.cancel() }
        let (x, y, o, z) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await RelayRulesTests.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await RelayRulesTests.rawPeer(y, address: "Y", network: network)
        var (peerX, peerY) = (rawX, rawY)
        defer {
            Task {
                await runningX.stop()
                await runningY.stop()
            }
        }
        // 1. Custody comes while R holds a flood copy and has no route to Z; then Y
        // announces Z and R sends the copy along that route.
        let first = MessageID.random()
        try await peerX.send(RelayRulesTests.data(1, first, origin: o, destination: z, ttl: 3, flags: Self.flood))
        #expect(try #require(try await peerX.receiveAck()).cumulative == 1)
        try await peerX.send(
            RelayRulesTests.data(2, first, origin: o, destination: z, ttl: 30, flags: DataFrame.sealedFlag)
        )
        #expect(try #require(try await peerX.receiveAck()).cumulative == 2)  // a duplicate of the copy R holds
        try await peerY.send(AnnounceTests.announce(z, 1, hops: 1, signer: TestReceiptSigner(peer: z)))
        let handed = try await Self.nextData(first, &peerY)
        #expect(handed.flags & DataFrame.floodFlag == 0, "R holds X's custody: it hands the copy on as an ordinary one")
        #expect(handed.ttl == 29, "with the TTL the custody came with, not what the flood left (2)")
        try await peerY.send(.ack(AckFrame(cumulative: handed.sequence)))
        try await eventually("R relayed it to Y") { await router.status(of: first)?.status == .relayed }

        // 2. Custody comes while R's flood copy is on its way to Y (Y has not acknowledged
        // it yet): once Y acknowledges it, R does not let it go but sends it again, as an
        // ordinary copy.
        let second = MessageID.random()
        try await peerX.send(RelayRulesTests.data(3, second, origin: o, destination: z, ttl: 3, flags: Self.flood))
        #expect(try #require(try await peerX.receiveAck()).cumulative == 3)
        clock.advance(by: .seconds(6))
        let asFlood = try await Self.nextData(second, &peerY)
        #expect(asFlood.flags & DataFrame.floodFlag != 0)
        try await peerX.send(
            RelayRulesTests.data(4, second, origin: o, destination: z, ttl: 30, flags: DataFrame.sealedFlag)
        )
        #expect(try #require(try await peerX.receiveAck()).cumulative == 4)
        try await peerY.send(.ack(AckFrame(cumulative: asFlood.sequence)))
        try await eventually("R keeps it queued") { await router.status(of: second)?.status == .queued }
        let retry = Task { [clock] in
            // Time for R's retry to come due (it backs off after a failed hop).
            while !Task.isCancelled {
                clock.advance(by: .seconds(1))
                await Task.yield()
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        defer { retry.cancel() }
        let again = try await Self.nextData(second, &peerY)
        retry.cancel()
        #expect(again.flags & DataFrame.floodFlag == 0)
        #expect(
            asFlood.ttl == 2 && again.ttl == 29,
            "the flood copy had what the flood left; the ordinary one has the custody's TTL"
        )
        #expect(again.payload == asFlood.payload)
        try await peerY.send(.ack(AckFrame(cumulative: again.sequence)))
        try await eventually("R relayed it to Y") { await router.status(of: second)?.status == .relayed }
    }
}
