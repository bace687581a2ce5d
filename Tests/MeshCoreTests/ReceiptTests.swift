import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// A stand-in for MeshCrypto's Ed25519 signer, so the core's receipt rules can be
/// driven from a raw peer: a "signature" is a keyed digest of the signer's peer ID and
/// the bytes, so only `peer`'s signer makes one that verifies as `peer`'s. (The real
/// signer is tested end to end in MeshCryptoTests.)
struct TestReceiptSigner: ReceiptSigner {
    let peer: PeerID

    func digest(_ bytes: [UInt8]) -> [UInt8] {
        // FNV-1a, widened to 32 bytes by running it over four lanes.
        (0..<4).flatMap { lane -> [UInt8] in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(lane)
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            return withUnsafeBytes(of: hash.bigEndian) { Array($0) }
        }
    }

    func sign(_ bytes: [UInt8]) -> [UInt8] {
        Self.signature(of: bytes, by: peer, digest: digest)
    }

    func verify(_ signature: [UInt8], of bytes: [UInt8], by peer: PeerID) -> Bool {
        signature == Self.signature(of: bytes, by: peer, digest: digest)
    }

    static func signature(of bytes: [UInt8], by peer: PeerID, digest: ([UInt8]) -> [UInt8]) -> [UInt8] {
        digest(peer.bytes + bytes) + digest(bytes + peer.bytes)
    }
}

/// Delivery receipts (docs/PROTOCOL.md "Delivery receipts"), driven frame by frame from
/// a raw peer: a router with a signer answers each message it took with a signed
/// receipt, and turns its own messages delivered only on a valid receipt from their
/// destination; forged, foreign-signed, mismatched and stray receipts are rejected or
/// ignored, and counted.
@Suite struct ReceiptTests {
    typealias RawPeer = ReceiverRulesTests.RawPeer

    static func receiptFrame(_ sequence: UInt32, origin: PeerID, destination: PeerID, body: [UInt8]) -> Frame {
        .data(
            DataFrame.whole(
                sequence: sequence,
                origin: origin,
                destination: destination,
                flags: DataFrame.receiptFlag,
                payload: body
            )
        )
    }

    @Test(.timeLimit(.minutes(3))) func receiptsAreIssuedCheckedAndCounted() async throws {
        let network = LoopbackNetwork()
        let r = PeerID.random()
        let x = PeerID.random()
        let y = PeerID.random()
        let signerR = TestReceiptSigner(peer: r)
        let signerX = TestReceiptSigner(peer: x)
        let signerY = TestReceiptSigner(peer: y)
        var logger = Logger(label: "r")
        logger.logLevel = .warning
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: RouterConfiguration(keepaliveInterval: .seconds(60)),
            receipts: signerR,
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let events = await router.events()
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
        try await peer.send(segment: Array("SCM0".utf8) + [Frame.version] + x.bytes)
        _ = try #require(try await peer.link.receive())  // R's hello

        /// The next DATA frame from R (acks and pings skipped).
        func nextData() async throws -> DataFrame {
            while let segment = try await peer.receiveSegment() {
                if case .data(let frame) = try Frame.decode(segment) { return frame }
            }
            throw MeshError(.linkClosed, "R closed the link")
        }

        // R sends a message to X; X's hop ack makes it sent, not delivered.
        let payload: [UInt8] = [5, 6, 7]
        let id = try await router.send(to: x, payload: payload)
        let data = try await nextData()
        #expect(data.messageID == id)
        #expect(data.flags & DataFrame.receiptFlag == 0)
        try await peer.send(.ack(AckFrame(cumulative: data.sequence)))
        #expect(try await router.waitForStatus(of: id, until: .sent, timeout: .seconds(10)).status == .sent)

        // A message R sent to Y (no link: it stays queued), for the foreign receipt below.
        let forY = try await router.send(to: y, payload: [1])

        var sequence: UInt32 = 0
        func sendReceipt(_ body: [UInt8]) async throws {
            sequence += 1
            try await peer.send(Self.receiptFrame(sequence, origin: x, destination: r, body: body))
            let ack = try #require(try await peer.receiveAck())
            #expect(ack.cumulative == sequence)  // every receipt frame is acknowledged
        }
        let good = DeliveryReceipt.sign(messageID: id, content: payload, sender: r, signer: signerX)
        var tampered = good
        tampered.signature[0] ^= 1
        let foreignSigned = DeliveryReceipt.sign(messageID: id, content: payload, sender: r, signer: signerY)
        let otherContent = DeliveryReceipt.sign(messageID: id, content: [5, 6, 8], sender: r, signer: signerX)
        let otherSender = DeliveryReceipt.sign(messageID: id, content: payload, sender: y, signer: signerX)
        let unknown = DeliveryReceipt.sign(messageID: .random(), content: payload, sender: r, signer: signerX)
        let notForX = DeliveryReceipt.sign(messageID: forY, content: [1], sender: r, signer: signerX)

        try await sendReceipt([1, 2, 3])
        try await sendReceipt(tampered.encoded)
        try await sendReceipt(foreignSigned.encoded)
        try await sendReceipt(otherSender.encoded)
        try await sendReceipt(otherContent.encoded)
        try await sendReceipt(unknown.encoded)
        try await sendReceipt(notForX.encoded)
        #expect(await router.status(of: id)?.status == .sent)
        #expect(await router.status(of: forY)?.status == .queued)
        var stats = await router.stats()
        #expect(
            stats.receiptsRejected == ["malformed": 1, "badSignature": 3, "digestMismatch": 1, "notFromDestination": 1]
        )
        #expect(stats.receiptsIgnored == ["unknownMessage": 1])
        #expect(stats.receiptsAccepted == 0)

        // The valid receipt makes the message delivered; a second copy is ignored.
        try await sendReceipt(good.encoded)
        #expect(try await router.waitForStatus(of: id, until: .delivered, timeout: .seconds(10)).status == .delivered)
        try await sendReceipt(good.encoded)
        stats = await router.stats()
        #expect(stats.receiptsAccepted == 1)
        #expect(stats.receiptsIgnored == ["unknownMessage": 1, "alreadyDelivered": 1])
        var rejections = 0
        for await event in events {
            if event.kind == .receiptRejected { rejections += 1 }
            if event.kind == .messageDelivered, event.messageID == id { break }
        }
        #expect(rejections == 6)

        // X sends R a message: R takes it and answers with its own signed receipt,
        // queued before the hop ack, acknowledged like any message.
        let mine = MessageID.random()
        sequence += 1
        let content: [UInt8] = Array("hello r".utf8)
        try await peer.send(
            .data(
                DataFrame.whole(sequence: sequence, messageID: mine, origin: x, destination: r, payload: content)
            )
        )
        #expect(await router.incoming.receive()?.id == mine)
        let receiptData = try await nextData()
        #expect(receiptData.flags & DataFrame.receiptFlag != 0)
        #expect(receiptData.origin == r)
        #expect(receiptData.destination == x)
        #expect(receiptData.messageID == DeliveryReceipt.receiptMessageID(for: mine, from: x, signer: signerR))
        let receipt = try DeliveryReceipt(decoding: receiptData.payload)
        #expect(receipt.messageID == mine)
        #expect(receipt.contentDigest == signerR.digest(content))
        #expect(signerX.verify(receipt.signature, of: receipt.signedBytes(sender: x), by: r))
        #expect(!signerX.verify(receipt.signature, of: receipt.signedBytes(sender: y), by: r))
        try await peer.send(.ack(AckFrame(cumulative: receiptData.sequence)))
        for _ in 0..<2000 where await router.stats().receiptsSent < 1 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await router.stats().receiptsSent == 1)
        // A receipt is never delivered to the application.
        #expect(router.incoming.count == 0)
        await router.shutdown()
    }

    @Test func receiptWireFormIsStrict() throws {
        let signer = TestReceiptSigner(peer: .random())
        let receipt = DeliveryReceipt.sign(messageID: .random(), content: [1], sender: .random(), signer: signer)
        let encoded = receipt.encoded
        #expect(encoded.count == DeliveryReceipt.encodedLength)
        #expect(encoded.count == 113)
        #expect(encoded.first == 1)
        #expect(try DeliveryReceipt(decoding: encoded) == receipt)
        #expect(throws: MeshError.self) { try DeliveryReceipt(decoding: Array(encoded.dropLast())) }
        #expect(throws: MeshError.self) { try DeliveryReceipt(decoding: encoded + [0]) }
        var badVersion = encoded
        badVersion[0] = 2
        let error = #expect(throws: MeshError.self) { try DeliveryReceipt(decoding: badVersion) }
        #expect(error?.code == .malformedFrame)
    }
}
