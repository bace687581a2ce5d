import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// One authenticated peer's partial messages cannot use up the reassembly room of
/// another (issue 16: four first chunks of declared 16 MiB messages used to reserve
/// the whole budget for 60 s).
@Suite struct ReassemblySharesTests {
    @Test(.timeLimit(.minutes(1))) func aPeerHoldingPartialMessagesCannotBlockAnotherPeersMessages() async throws {
        let pair = await RouterPair(transports: [("lo", 10, .init(mtu: 65_535))], configuration: RouterTests.testConfiguration)
        try await pair.waitForLinks(["lo"])
        let hostile = LoopbackTransport(name: "lo", address: "H", network: pair.network, configuration: .init(mtu: 65_535, discovery: false))
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
                sequence: UInt32(sequence), messageID: .random(), origin: hostileID, destination: pair.b.localPeerID, ttl: 7,
                chunkIndex: 0, chunkCount: UInt16(chunks), messageLength: UInt32(declared),
                payload: [UInt8](repeating: 0xEE, count: Frame.chunkSize))
            for packet in try PacketFramer.packets(for: Frame.data(frame).encoded(), mtu: link.mtu) { try await link.send(packet) }
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
        try await pair.a.send(to: pair.b.localPeerID, payload: payload)
        try await pair.waitForReceived(1)
        #expect(pair.received.withLock { $0.first?.payload } == payload)
        let stats = await pair.b.stats()
        #expect(stats.framesRefused >= 40 - limits.maxMessagesPerPeer)
        await running.stop()
        await pair.stop()
    }
}
