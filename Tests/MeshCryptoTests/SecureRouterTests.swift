import Logging
import MeshCore
import MeshCrypto
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Routers with Noise XX on every link and sealed envelopes, over loopback.
@Suite struct SecureRouterTests {
    static let configuration = RouterConfiguration(
        reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200))
    )

    static func makeRouter(
        _ identity: NodeIdentity,
        address: String,
        network: LoopbackNetwork,
        discovery: Bool = true,
        sealing: SealingPolicy = .relayedOnly,
        receipts: Bool = false
    ) async -> Router {
        var logger = Logger(label: "secure-router")
        logger.logLevel = .critical
        var configuration = Self.configuration
        configuration.sealing = sealing
        let router = Router(
            security: NoiseLinkSecurity(identity: identity),
            configuration: configuration,
            sealer: EnvelopeSealer(identity: identity),
            receipts: receipts ? IdentityReceiptSigner(identity: identity) : nil,
            logger: logger
        )
        await router.add(
            LoopbackTransport(
                name: "lo",
                address: address,
                network: network,
                configuration: .init(mtu: 200, discovery: discovery)
            ),
            priority: 10
        )
        return router
    }

    @Test(arguments: [SealingPolicy.always, .relayedOnly])
    func twoRoutersCompleteXXAndExchangeMessages(sealing: SealingPolicy) async throws {
        let network = LoopbackNetwork()
        let alice = NodeIdentity.generate()
        let bob = NodeIdentity.generate()
        let a = await Self.makeRouter(alice, address: "alice", network: network, sealing: sealing)
        let b = await Self.makeRouter(bob, address: "bob", network: network, sealing: sealing)
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        let large = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try await eventually("A links to Bob") { await a.peers().contains { $0.peer == bob.peerID } }
        try await a.send(to: bob.peerID, payload: Array("hello bob".utf8), waitUntil: .delivered)
        try await a.send(to: bob.peerID, payload: large, waitUntil: .delivered)
        try await b.send(to: alice.peerID, payload: Array("hi alice".utf8), waitUntil: .delivered)
        let first = await b.incoming.receive()
        let second = await b.incoming.receive()
        let back = await a.incoming.receive()
        #expect(first?.payload == Array("hello bob".utf8))
        #expect(first?.from == alice.peerID)
        #expect(second?.payload == large)
        #expect(back?.payload == Array("hi alice".utf8))
        #expect(await b.stats().sealedMessagesRejected.isEmpty)
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
    }

    /// A node that knows Bob's ID dials an address where Mallory listens: Mallory
    /// cannot prove Bob's key, so the link is refused and nothing is sent.
    @Test func impostorWithTheRightPeerIDButWrongKeyIsRefused() async throws {
        let network = LoopbackNetwork()
        let alice = NodeIdentity.generate()
        let bob = NodeIdentity.generate()
        let mallory = NodeIdentity.generate()
        let a = await Self.makeRouter(alice, address: "alice", network: network, discovery: false)
        let m = await Self.makeRouter(mallory, address: "mallory", network: network, discovery: false)
        let events = await a.events()
        let runs = [Task { try? await a.run() }, Task { try? await m.run() }]
        await a.connect(to: PeerHint(transport: "lo", address: "mallory", peerID: bob.peerID))
        var refused = false
        for await event in events {
            if event.kind == .handshakeFailed {
                refused = true
                break
            }
        }
        #expect(refused)
        #expect(await a.peers().isEmpty)
        let stats = await a.stats()
        #expect(stats.handshakeFailuresByReason["peerMismatch", default: 0] >= 1)
        // No authenticated link to bob: the message waits in the queue, never goes to mallory.
        let id = try await a.send(to: bob.peerID, payload: [1])
        #expect(await a.status(of: id)?.status == .queued)
        await a.shutdown()
        await m.shutdown()
        for run in runs { await run.value }
    }

    /// Signed receipts end to end with the real Ed25519 signer: the next hop's ack
    /// makes a message sent, the destination's receipt makes it delivered, both ways,
    /// sealed and not.
    @Test(arguments: [SealingPolicy.always, .relayedOnly])
    func signedReceiptsTurnMessagesDelivered(sealing: SealingPolicy) async throws {
        let network = LoopbackNetwork()
        let alice = NodeIdentity.generate()
        let bob = NodeIdentity.generate()
        let a = await Self.makeRouter(alice, address: "alice", network: network, sealing: sealing, receipts: true)
        let b = await Self.makeRouter(bob, address: "bob", network: network, sealing: sealing, receipts: true)
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        let toBob = try await a.send(to: bob.peerID, payload: Array("hello bob".utf8))
        let large = try await a.send(to: bob.peerID, payload: (0..<70_000).map { UInt8(truncatingIfNeeded: $0) })
        let toAlice = try await b.send(to: alice.peerID, payload: Array("hi alice".utf8))
        for (router, id) in [(a, toBob), (a, large), (b, toAlice)] {
            let record = try await router.waitForStatus(of: id, until: .delivered, timeout: .seconds(60))
            #expect(record.status == .delivered)
            #expect(record.transport == "lo")
        }
        #expect(await a.stats().receiptsAccepted == 2)
        #expect(await b.stats().receiptsAccepted == 1)
        #expect(await a.stats().receiptsRejected.isEmpty)
        for _ in 0..<2000 where await b.stats().receiptsSent < 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await b.stats().receiptsSent == 2)
        // Receipts never reach the application: it gets the two messages (in either
        // order: both went out at once) and nothing else.
        var sizes: [Int] = []
        for _ in 0..<2 { sizes.append(await b.incoming.receive()?.payload.count ?? -1) }
        #expect(sizes.sorted() == ["hello bob".utf8.count, 70_000])
        #expect(b.incoming.count == 0)
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
    }

    @Test func sealerRejectsEnvelopesFromSomeoneElse() throws {
        let alice = NodeIdentity.generate()
        let bob = NodeIdentity.generate()
        let mallory = NodeIdentity.generate()
        let sealed = try EnvelopeSealer(identity: mallory).seal([1, 2, 3], to: bob.peerID)
        let error = #expect(throws: MeshError.self) {
            try EnvelopeSealer(identity: bob).open(sealed, from: alice.peerID)
        }
        #expect(error?.code == .senderMismatch)
        #expect(try EnvelopeSealer(identity: bob).open(sealed, from: mallory.peerID) == [1, 2, 3])
    }
}
