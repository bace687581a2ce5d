import Logging
import MeshCore
import MeshCrypto
import MeshTesting
import Testing
import TransportLoopback

/// Multi-hop with the real crypto: Noise XX links, Ed25519-signed announcements and
/// receipts, sealed envelopes. Alice and Carol are linked only through the relay, who
/// carries Alice's large message (reassembled, queued, forwarded in chunks) and Carol's
/// receipt without being able to read either.
@Suite struct SecureRelayTests {
    @Test(.timeLimit(.minutes(3))) func aRelayCarriesSealedMessagesAndSignedReceipts() async throws {
        let network = LoopbackNetwork()
        let alice = NodeIdentity.generate()
        let relay = NodeIdentity.generate()
        let carol = NodeIdentity.generate()
        let a = await SecureRouterTests.makeRouter(
            alice,
            address: "alice",
            network: network,
            discovery: false,
            receipts: true
        )
        let r = await SecureRouterTests.makeRouter(
            relay,
            address: "relay",
            network: network,
            discovery: false,
            receipts: true
        )
        let c = await SecureRouterTests.makeRouter(
            carol,
            address: "carol",
            network: network,
            discovery: false,
            receipts: true
        )
        let runs = [a, r, c].map { router in Task { try? await router.run() } }
        await r.connect(to: PeerHint(transport: "lo", address: "alice"))
        await c.connect(to: PeerHint(transport: "lo", address: "relay"))
        try await eventually("A learns a 2-hop route to Carol") {
            await a.routes().contains { $0.destination == carol.peerID && $0.hops == 2 }
        }
        #expect(await a.peers().contains { $0.peer == carol.peerID } == false)

        let large = (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let id = try await a.send(to: carol.peerID, payload: large, waitUntil: .delivered, timeout: .seconds(30))
        let received = await c.incoming.receive()
        #expect(received?.id == id)
        #expect(received?.from == alice.peerID)
        #expect(received?.payload == large)
        #expect(await a.status(of: id)?.status == .delivered)
        let relayStats = await r.stats()
        #expect(relayStats.relayAccepted == 2)  // the message and the receipt
        #expect(relayStats.messagesReceived == 0)
        #expect(relayStats.announcesRejected.isEmpty)
        #expect(await c.stats().sealedMessagesRejected.isEmpty)
        #expect(await a.stats().receiptsAccepted == 1)
        for router in [a, r, c] { await router.shutdown() }
        for run in runs { await run.value }
    }
}
