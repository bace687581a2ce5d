import Logging
import MeshCore
import MeshCrypto
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback
import TransportTCP

/// Issue 13's upgrade test over a real transport: two routers with Noise XX identities
/// first linked over a slow loopback link (64-byte packets, 200 kbit/s, like BLE), both
/// also listening on real TCP on 127.0.0.1 with no peers configured. Only the signed
/// address records (docs/PROTOCOL.md §A.8) tell each where the other listens; the
/// traffic moves to TCP with nothing lost or repeated.
@Suite struct TCPUpgradeTests {
    static func router(_ name: String, identity: NodeIdentity, slow: LoopbackNetwork, tcp: Bool) async -> Router {
        var logger = Logger(label: name)
        logger.logLevel = .warning
        let router = Router(
            security: NoiseLinkSecurity(identity: identity),
            configuration: RouterConfiguration(
                reconnect: ReconnectConfiguration(
                    initialDelay: .milliseconds(20),
                    maxDelay: .milliseconds(200),
                    jitter: 0.2
                )
            ),
            sealer: EnvelopeSealer(identity: identity),
            receipts: IdentityReceiptSigner(identity: identity),
            logger: logger
        )
        await router.add(
            LoopbackTransport(
                name: "slow",
                address: name,
                network: slow,
                configuration: .init(mtu: 64, discovery: false, bitrate: 200_000)
            ),
            priority: 20
        )
        if tcp { await router.add(Self.tcp(), priority: 10) }
        return router
    }

    /// A TCP transport on a port the kernel picks, with no peers to dial.
    static func tcp() -> TCPTransport { TCPTransport(configuration: .init(listen: ["127.0.0.1:0"])) }

    @Test(.timeLimit(.minutes(3))) func trafficMovesFromASlowLinkToTCPWithNothingLostOrRepeated() async throws {
        let slow = LoopbackNetwork()
        let (alice, bob) = (NodeIdentity.generate(), NodeIdentity.generate())
        // B's TCP comes up later (as when a phone joins Wi-Fi), while traffic flows.
        let a = await Self.router("A", identity: alice, slow: slow, tcp: true)
        let b = await Self.router("B", identity: bob, slow: slow, tcp: false)
        let received = Mutex<[MessageID]>([])
        let tasks = [
            Task { try? await a.run() }, Task { try? await b.run() },
            Task { while let message = await b.incoming.receive() { received.withLock { $0.append(message.id) } } },
        ]
        defer { for task in tasks { task.cancel() } }
        try await eventually("A listens on TCP", attempts: 1500) {
            await a.transportStatus().contains { $0.name == "tcp" && $0.state == .running && !$0.addresses.isEmpty }
        }
        await a.connect(to: PeerHint(transport: "slow", address: "B"))
        try await eventually("A links to B over the slow transport", attempts: 1500) {
            await a.peers().first?.links.isEmpty == false
        }

        // Messages go out from the moment the slow link is up, while the upgrade happens.
        var sent: [MessageID] = []
        for index in 0..<200 {
            sent.append(
                try await a.send(
                    to: bob.peerID,
                    payload: Array("message \(index) ".utf8) + [UInt8](repeating: UInt8(index % 251), count: 300)
                )
            )
        }
        try await eventually("some messages arrive over the slow link", attempts: 1500) {
            received.withLock { $0.count } >= 10
        }
        #expect(await a.peers().first?.links.map(\.transport) == ["slow"])
        await b.add(Self.tcp(), priority: 10)
        try await eventually("A and B link over TCP too", attempts: 1500) {
            await a.peers().first?.links.contains { $0.transport == "tcp" } == true
        }
        for index in 200..<300 {
            sent.append(try await a.send(to: bob.peerID, payload: Array("message \(index)".utf8)))
        }
        try await eventually("every message is delivered", attempts: 1500) {
            for id in sent where await a.status(of: id)?.status != .delivered { return false }
            return true
        }
        // TCP is the preferred link now and carries traffic; the records verified.
        // (Ranked by health too: a link that missed an ack under a loaded machine ranks
        // lower until its next ack or pong, so the ranking is awaited, not sampled; on
        // such a machine the 100 messages above may all have left before it did, so one
        // more goes once TCP ranks first.)
        try await eventually("TCP ranks first among A's links to B", attempts: 1500) {
            await a.peers().first?.links.first?.transport == "tcp"
        }
        let last = try await a.send(to: bob.peerID, payload: Array("after the upgrade".utf8))
        sent.append(last)
        try await eventually("the last message is delivered", attempts: 1500) {
            await a.status(of: last)?.status == .delivered
        }
        let ids = received.withLock { $0 }
        #expect(ids.count == sent.count, "\(ids.count) deliveries for \(sent.count) messages")
        #expect(Set(ids) == Set(sent))
        let (statsA, statsB) = (await a.stats(), await b.stats())
        #expect((statsA.transports["tcp"]?.framesSent ?? 0) > 0)
        // Neither TCP transport has peers or discovery: the slow link came first and TCP
        // was dialled only because of an address record.
        #expect((statsA.transports["slow"]?.framesSent ?? 0) > 0)
        #expect(statsA.addressRecordsAccepted >= 1 && statsB.addressRecordsAccepted >= 1)
        #expect(statsA.upgradeDials + statsB.upgradeDials >= 1)
        #expect(statsA.addressRecordsRejected.isEmpty && statsB.addressRecordsRejected.isEmpty)
        for router in [a, b] { await router.shutdown() }
    }
}
