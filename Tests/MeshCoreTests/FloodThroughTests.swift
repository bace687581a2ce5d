import MeshCore
import MeshTesting
import TestSupport
import Testing
import TransportLoopback

/// A flood through (DATA flag `0x0010`, docs/PROTOCOL.md §A.9) is sent on as a flood by
/// a relay that holds a route to its destination; an ordinary flood copy goes along
/// that route. R has raw neighbours X, Y and Z, and a route to T through Z; X floods R
/// a copy of a message for T.
@Suite struct FloodThroughTests {
    @Test(.timeLimit(.minutes(3)), arguments: [false, true])
    func aFloodThroughIsNotStoppedByARoute(through: Bool) async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        let (router, run) = try await FloodCustodyTests.floodRelay(
            network: network,
            clock: clock,
            queue: InMemoryOutboundQueue(clock: clock)
        )
        defer { run.cancel() }
        let (x, y, z, o, t) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await RelayRulesTests.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await RelayRulesTests.rawPeer(y, address: "Y", network: network)
        let (rawZ, runningZ) = try await RelayRulesTests.rawPeer(z, address: "Z", network: network)
        var (peerX, peerY, peerZ) = (rawX, rawY, rawZ)
        defer {
            Task {
                await runningX.stop()
                await runningY.stop()
                await runningZ.stop()
            }
        }
        try await eventually("R is linked to X, Y and Z") { await router.peers().count == 3 }
        try await peerZ.send(AnnounceTests.announce(t, 10, hops: 1, signer: TestReceiptSigner(peer: t)))
        try await waitUntil("R routes to T through Z") {
            await router.routes().contains { $0.destination == t && $0.nextHop == z }
        }

        let id = MessageID.random()
        let flags = FloodCustodyTests.flood | (through ? DataFrame.floodThroughFlag : 0)
        try await peerX.send(RelayRulesTests.data(1, id, origin: o, destination: t, flags: flags))
        #expect(try #require(try await peerX.receiveAck()).cumulative == 1)
        clock.advance(by: .seconds(6))  // past the flood delay (5 s)
        let toZ = try await FloodCustodyTests.nextData(id, &peerZ)
        #expect(toZ.flags & DataFrame.floodThroughFlag == flags & DataFrame.floodThroughFlag)
        try await peerZ.send(.ack(AckFrame(cumulative: toZ.sequence)))
        if through {
            // Sent to every neighbour but the one that offered it, route or no route.
            let toY = try await FloodCustodyTests.nextData(id, &peerY)
            #expect(toY.flags & flags == flags)
            try await peerY.send(.ack(AckFrame(cumulative: toY.sequence)))
        }
        try await eventually("R passed it on") { await router.status(of: id)?.status == .relayed }
        #expect(await router.stats().flood.transmissions == (through ? 2 : 0))
    }
}
