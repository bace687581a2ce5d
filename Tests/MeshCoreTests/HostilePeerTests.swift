import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// One authenticated peer's partial messages cannot use up the reassembly room of
/// another (issue 16): a few first chunks of declared 16 MiB messages must not reserve
/// the whole budget.
@Suite struct ReassemblySharesTests {
    @Test(.timeLimit(.minutes(3))) func aPeerHoldingPartialMessagesCannotBlockAnotherPeersMessages() async throws {
        let pair = await RouterPair(
            transports: [("lo", 10, .init(mtu: 65_535))],
            configuration: RouterTests.testConfiguration
        )
        try await pair.waitForLinks(["lo"])
        let hostile = LoopbackTransport(
            name: "lo",
            address: "H",
            network: pair.network,
            configuration: .init(mtu: 65_535, discovery: false)
        )
        let hostileID = PeerID.random()
        let running = try await RunningTransport.start(hostile, localPeerID: hostileID)
        let link = try await hostile.dial(PeerHint(transport: "lo", address: "B"))
        try await link.send([0xC0] + Array("SCM0".utf8) + [Frame.version] + hostileID.bytes)
        _ = try await link.receive()  // B's hello

        // 40 first chunks, each announcing a 16 MiB message that never completes.
        let limits = ReassemblyLimits()
        let declared = 16 << 20
        let chunks = DataFrame.chunkCount(messageLength: declared)
        for sequence in 1...40 {
            let frame = DataFrame(
                sequence: UInt32(sequence),
                messageID: .random(),
                origin: hostileID,
                destination: pair.b.localPeerID,
                ttl: 7,
                chunkIndex: 0,
                chunkCount: UInt16(chunks),
                messageLength: UInt32(declared),
                payload: [UInt8](repeating: 0xEE, count: Frame.chunkSize)
            )
            for packet in try PacketFramer.packets(for: Frame.data(frame).encoded(), mtu: link.mtu) {
                try await link.send(packet)
            }
        }
        // B acknowledges exactly its per-peer share of partial messages and refuses the rest.
        var acked: UInt32 = 0
        while acked < UInt32(limits.maxMessagesPerPeer) {
            guard let packet = try await link.receive() else { break }
            if case .ack(let ack) = try Frame.decode(Array(packet.dropFirst())) { acked = max(acked, ack.cumulative) }
        }
        #expect(acked == UInt32(limits.maxMessagesPerPeer))

        // An honest peer's two-chunk message still goes through at once.
        let payload = [UInt8](repeating: 0x42, count: 100_000)
        try await pair.a.send(to: pair.b.localPeerID, payload: payload, waitUntil: .delivered)
        try await pair.waitForReceived(1)
        #expect(pair.received.withLock { $0.first?.payload } == payload)
        // The rest were refused (not acknowledged) as B reached them.
        var refused = 0
        for _ in 0..<2000 {
            refused = await pair.b.stats().framesRefused
            if refused >= 40 - limits.maxMessagesPerPeer { break }
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(refused >= 40 - limits.maxMessagesPerPeer)
        await running.stop()
        await pair.stop()
    }
}

/// Strangers holding idle connections in their handshake cannot lock honest peers
/// out: the oldest unauthenticated link makes room for the newcomer.
@Suite struct UnauthenticatedBudgetTests {
    @Test(.timeLimit(.minutes(3))) func idleStrangersAreEvictedAndAnHonestPeerGetsIn() async throws {
        var configuration = RouterTests.testConfiguration
        configuration.maxUnauthenticatedLinks = 8
        configuration.handshakeTimeout = .seconds(600)  // only eviction can free a slot here
        let network = LoopbackNetwork()
        let b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            logger: Logger(label: "b")
        )
        await b.add(
            LoopbackTransport(name: "lo", address: "B", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let events = await b.events()
        let runB = Task { try? await b.run() }
        for await event in events where event.kind == .transportStarted { break }
        let stranger = LoopbackTransport(
            name: "lo",
            address: "S",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(stranger)
        var idle: [any Link] = []
        for _ in 0..<50 { idle.append(try await stranger.dial(PeerHint(transport: "lo", address: "B"))) }
        // An honest peer now connects and is served.
        let a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            logger: Logger(label: "a")
        )
        await a.add(
            LoopbackTransport(name: "lo", address: "A", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let runA = Task { try? await a.run() }
        await a.connect(to: PeerHint(transport: "lo", address: "B", peerID: b.localPeerID))
        for await event in events where event.kind == .linkUp { break }
        try await a.send(to: b.localPeerID, payload: [1], waitUntil: .delivered)
        #expect(await b.incoming.receive()?.payload == [1])
        let stats = await b.stats()
        #expect(stats.unauthenticatedLinksEvicted >= 50 - 8)
        #expect(stats.handshakeFailures == 0)  // evictions are not logged as failures
        for link in idle { await link.close() }
        await running.stop()
        await a.shutdown()
        await b.shutdown()
        _ = await (runA.value, runB.value)
    }

    /// An authenticated link leaves the budget of unauthenticated ones: strangers
    /// arriving afterwards evict each other, never it.
    @Test(.timeLimit(.minutes(3))) func strangersNeverEvictAnAuthenticatedLink() async throws {
        var configuration = RouterTests.testConfiguration
        configuration.maxUnauthenticatedLinks = 4
        configuration.handshakeTimeout = .seconds(600)
        let network = LoopbackNetwork()
        let b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            logger: Logger(label: "b")
        )
        await b.add(
            LoopbackTransport(name: "lo", address: "B", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let events = await b.events()
        let runB = Task { try? await b.run() }
        for await event in events where event.kind == .transportStarted { break }
        let a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            logger: Logger(label: "a")
        )
        await a.add(
            LoopbackTransport(name: "lo", address: "A", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let runA = Task { try? await a.run() }
        await a.connect(to: PeerHint(transport: "lo", address: "B", peerID: b.localPeerID))
        for await event in events where event.kind == .linkUp { break }
        // Strangers that send half a hello (so none of them is "silent") fill the budget many times over.
        let stranger = LoopbackTransport(
            name: "lo",
            address: "S",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(stranger)
        var idle: [any Link] = []
        for _ in 0..<40 {
            let link = try await stranger.dial(PeerHint(transport: "lo", address: "B"))
            try await link.send([0x80, 0x00, 0x40] + Array("SCM0".utf8))  // the first packet of a 64-byte hello
            idle.append(link)
        }
        try await waitUntil("B to evict the strangers") { await b.stats().unauthenticatedLinksEvicted >= 40 - 4 }
        try await a.send(to: b.localPeerID, payload: [7])
        #expect(await b.incoming.receive()?.payload == [7])
        #expect(await b.stats().linksClosed == 0)
        for link in idle { await link.close() }
        await running.stop()
        await a.shutdown()
        await b.shutdown()
        _ = await (runA.value, runB.value)
    }
}
