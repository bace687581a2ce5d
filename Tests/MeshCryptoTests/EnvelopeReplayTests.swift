import MeshCore
import MeshCrypto
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Issue 41, finding 1: M, a neighbour of A, receives A's sealed emergency (A floods
/// it to every neighbour) and speaks the wire by hand (`RawPeer`). It delivers the
/// envelope to C again under fresh IDs, turns it into a receipt, and hands relay R a
/// dozen copies under fresh IDs to spend A's emergency budget there. The envelope
/// binds the message ID and the end-to-end flags (docs/PROTOCOL.md §B.3, format 2), so
/// C delivers it once, R spends nothing on the copies, and every mismatch is counted.
@Suite struct EnvelopeReplayTests {
    @Test(.timeLimit(.minutes(3))) func aRelayCannotReplayAnEnvelopeUnderFreshIDsOrSpendTheOriginsEmergencies()
        async throws
    {
        let network = LoopbackNetwork()
        let a = try await MaliciousRelayTests.node("A", network: network)
        let c = try await MaliciousRelayTests.node("C", network: network)
        let r = try await MaliciousRelayTests.node("R", network: network)
        defer { for node in [a, c, r] { node.run.cancel() } }
        let received = Mutex<[InboundMessage]>([])
        let sink = Task {
            while let message = await c.router.incoming.receive() { received.withLock { $0.append(message) } }
        }
        defer { sink.cancel() }

        let mallory = NodeIdentity.generate()
        let m = mallory.peerID
        let mTransport = LoopbackTransport(
            name: "lo",
            address: "M",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(mTransport, localPeerID: m)
        defer { Task { await running.stop() } }
        var toA = try await MaliciousRelayTests.link(from: mTransport, as: m, to: "A")
        var toC = try await MaliciousRelayTests.link(from: mTransport, as: m, to: "C")
        var toR = try await MaliciousRelayTests.link(from: mTransport, as: m, to: "R")

        // A's emergency to C, flooded at once to its only neighbour, M.
        let id = try await a.router.send(to: c.peer, payload: Array("help".utf8), options: SendOptions(emergency: true))
        let data = try await MaliciousRelayTests.next(from: &toA) {
            if case .data(let f) = $0, f.messageID == id { f } else { nil }
        }
        #expect(
            data.flags & (DataFrame.sealedFlag | DataFrame.emergencyFlag) == DataFrame.sealedFlag
                | DataFrame.emergencyFlag
        )
        try await toA.send(.ack(AckFrame(cumulative: data.sequence)))

        var sequence: UInt32 = 0
        func copy(_ frame: DataFrame, id: MessageID? = nil, flags: UInt16? = nil) -> Frame {
            sequence += 1
            var copy = frame
            copy.sequence = sequence
            copy.ttl -= 1
            if let id { copy.messageID = id }
            if let flags { copy.flags = flags }
            return .data(copy)
        }
        // To C: the genuine copy, then replays under fresh IDs (one as an ordinary
        // message, one as a receipt).
        try await toC.send(copy(data))
        try await toC.send(copy(data, id: .random()))
        try await toC.send(copy(data, id: .random(), flags: DataFrame.sealedFlag))
        try await toC.send(copy(data, id: .random(), flags: DataFrame.sealedFlag | DataFrame.receiptFlag))
        // C answers a PING only after it handled every frame before it on the link.
        try await toC.send(.ping(nonce: 1))
        _ = try await MaliciousRelayTests.next(from: &toC) { if case .pong(1) = $0 { true } else { nil } }
        try await eventually("C delivered A's emergency", attempts: 1500) { received.withLock { $0.count } == 1 }
        let delivered = try #require(received.withLock { $0.first })
        #expect(delivered.id == id && delivered.from == a.peer && delivered.emergency)
        let statsC = await c.router.stats()
        #expect(statsC.sealedMessagesRejected["bindingMismatch"] == 3, "\(statsC.sealedMessagesRejected)")

        // To R, which has no route to C: twelve copies under fresh IDs, more than A's
        // ten emergencies an hour, then the genuine one.
        sequence = 0
        for _ in 0..<12 { try await toR.send(copy(data, id: .random())) }
        try await toR.send(copy(data))
        try await toR.send(.ping(nonce: 2))
        _ = try await MaliciousRelayTests.next(from: &toR) { if case .pong(2) = $0 { true } else { nil } }
        let statsR = await r.router.stats()
        #expect(statsR.sealedMessagesRejected["bindingMismatch"] == 12, "\(statsR.sealedMessagesRejected)")
        #expect(statsR.flood.emergencyRateLimited.isEmpty, "\(statsR.flood.emergencyRateLimited)")
        #expect(statsR.flood.accepted == 1)
        #expect(received.withLock { $0.count } == 1)  // nothing more at C
        for node in [a, c, r] { await node.router.shutdown() }
    }
}
