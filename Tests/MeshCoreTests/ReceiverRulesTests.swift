import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// The receiving side of docs/PROTOCOL.md §A.1–A.3, driven frame by frame from a raw
/// peer over a loopback link: which DATA frames are acknowledged, refused or
/// delivered, what a reused hop sequence number does, and that a packet error closes
/// the link.
@Suite struct ReceiverRulesTests {
    /// The far end of one link to a router, speaking the wire protocol by hand.
    typealias RawPeer = MeshTesting.RawPeer

    static let chunk: [UInt8] = [1, 2, 3]

    static func data(
        _ sequence: UInt32,
        _ id: MessageID,
        origin: PeerID,
        destination: PeerID,
        ttl: UInt8 = 7,
        flags: UInt16 = 0
    ) -> Frame {
        .data(
            DataFrame.whole(
                sequence: sequence,
                messageID: id,
                origin: origin,
                destination: destination,
                ttl: ttl,
                flags: flags,
                payload: chunk
            )
        )
    }

    @Test func dataFramesAreAcknowledgedRefusedOrDeliveredAsDocumented() async throws {
        let network = LoopbackNetwork()
        let r = PeerID.random()
        let x = PeerID.random()
        let y = PeerID.random()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: RouterConfiguration(keepaliveInterval: .seconds(60)),
            logger: Logger(label: "r")
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        defer { run.cancel() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }

        let transport = LoopbackTransport(
            name: "lo",
            address: "X",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(transport, localPeerID: x)
        defer { Task { await running.stop() } }
        var peer = RawPeer(link: try await transport.dial(PeerHint(transport: "lo", address: "R")))

        // Plaintext handshake; like every segment, each hello carries the 0xC0 packet flag.
        let hello = Array("SCM0".utf8) + [Frame.version] + x.bytes
        try await peer.send(segment: hello)
        let firstPacket = try #require(try await peer.link.receive())
        #expect(firstPacket.first == 0xC0)
        // The router's hello ends with its capabilities (every feature: 0x03FF).
        #expect(Array(firstPacket.dropFirst()) == Array("SCM0".utf8) + [Frame.version] + r.bytes + [0x03, 0xFF])

        func expectDelivered(_ id: MessageID?) async {
            if let id {
                let message = await router.incoming.receive()
                #expect(message?.id == id)
                #expect(message?.from == x)
            }
            #expect(router.incoming.count == 0)
        }

        let a = MessageID.random()
        let b = MessageID.random()
        let c = MessageID.random()
        let d = MessageID.random()
        let e = MessageID.random()
        let f = MessageID.random()
        let g = MessageID.random()
        let h = MessageID.random()

        try await peer.send(Self.data(1, a, origin: x, destination: r))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 1))
        await expectDelivered(a)

        // A reused sequence number with a new message ID: re-acknowledged and delivered.
        try await peer.send(Self.data(1, b, origin: x, destination: r))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 1))
        await expectDelivered(b)

        // A reused sequence number with a known message ID: re-acknowledged, dropped by dedup.
        try await peer.send(Self.data(1, a, origin: x, destination: r))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 1))
        await expectDelivered(nil)

        // TTL 0 is not looked at.
        try await peer.send(Self.data(2, c, origin: x, destination: r, ttl: 0))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 2))
        await expectDelivered(c)

        // Not addressed to the receiver: refused, so sequence 3 is never acknowledged.
        try await peer.send(Self.data(3, d, origin: x, destination: y))
        try await peer.send(Self.data(4, e, origin: x, destination: r))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 2, selective: [4]))
        await expectDelivered(e)

        // Unsealed with a spoofed origin: acknowledged, never delivered, and its ID not
        // remembered: the genuine message with that ID, from its origin, still gets in.
        try await peer.send(Self.data(3, f, origin: y, destination: r))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 4))
        await expectDelivered(nil)
        try await peer.send(Self.data(5, f, origin: x, destination: r))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 5))
        await expectDelivered(f)

        // Sealed, but this router has no sealer: acknowledged and dropped.
        try await peer.send(Self.data(6, g, origin: x, destination: r, flags: DataFrame.sealedFlag))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 6))
        await expectDelivered(nil)

        try await peer.send(Self.data(7, h, origin: x, destination: r))
        #expect(try await peer.receiveAck() == AckFrame(cumulative: 7))
        await expectDelivered(h)

        let stats = await router.stats()
        #expect(stats.sealedMessagesRejected == ["unsealedFromThirdParty": 1, "noSealer": 1])
        #expect(stats.framesRefused == 1)
        #expect(stats.messagesReceived == 6)

        // A continuation without a first fragment closes the link.
        try await peer.link.send([0x00, 1, 2])
        #expect(try await peer.receiveSegment() == nil)
        #expect(await router.stats().malformedInputs == ["malformedFrame": 1])
    }
}
