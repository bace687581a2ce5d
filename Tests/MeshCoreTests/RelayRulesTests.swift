import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// The relay's rules (docs/PROTOCOL.md §A.6) driven frame by frame from two raw
/// neighbours X and Y: custody before the acknowledgement, unsealed and TTL-1 frames
/// refused, a retry acknowledged as a duplicate, a message coming back round a loop
/// refused.
@Suite struct RelayRulesTests {
    typealias RawPeer = ReceiverRulesTests.RawPeer

    /// Links a raw peer with ID `id` at `address` to the router at "R".
    static func rawPeer(
        _ id: PeerID,
        address: String,
        network: LoopbackNetwork
    ) async throws -> (RawPeer, RunningTransport) {
        let transport = LoopbackTransport(
            name: "lo",
            address: address,
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(transport, localPeerID: id)
        let peer = RawPeer(link: try await transport.dial(PeerHint(transport: "lo", address: "R")))
        try await peer.send(segment: Array("SCM0".utf8) + [Frame.version] + id.bytes)
        _ = try #require(try await peer.link.receive())  // R's hello
        return (peer, running)
    }

    /// A one-chunk DATA frame; `flags` (when given) replace the sealed flag `sealed` sets.
    static func data(
        _ sequence: UInt32,
        _ id: MessageID,
        origin: PeerID,
        destination: PeerID,
        ttl: UInt8 = 7,
        sealed: Bool = true,
        flags: UInt16? = nil
    ) -> Frame {
        let body: [UInt8] = [0xE0, 0x01, 0x02]
        return .data(
            DataFrame.whole(
                sequence: sequence,
                messageID: id,
                origin: origin,
                destination: destination,
                ttl: ttl,
                flags: flags ?? (sealed ? DataFrame.sealedFlag : 0),
                payload: body
            )
        )
    }

    /// A relay "R" with peer ID `r` on `network`, keeping its messages in `queue`
    /// (a new in-memory one by default), running until the returned task is cancelled.
    /// `configuration` defaults to ack timeouts of 5–10 s and no keepalives to speak of.
    static func relay(
        _ r: PeerID,
        network: LoopbackNetwork,
        queue: InMemoryOutboundQueue = InMemoryOutboundQueue(),
        configuration: RouterConfiguration? = nil,
        clock: any MeshClock = SystemClock(),
        random: (any MeshRandom)? = nil
    ) async throws -> (Router, Task<Void, any Error>) {
        var logger = Logger(label: "r")
        logger.logLevel = .critical
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: configuration
                ?? RouterConfiguration(
                    escalation: EscalationConfiguration(ackTimeoutMin: .seconds(5), ackTimeoutMax: .seconds(10)),
                    keepaliveInterval: .seconds(600)
                ),
            sealer: StandInSealer(peer: r),
            receipts: TestReceiptSigner(peer: r),
            queue: queue,
            clock: clock,
            random: random,
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        try await eventually("R's transport runs") { await router.transportStatus().first?.state == .running }
        return (router, run)
    }

    @Test(.timeLimit(.minutes(3))) func custodyDuplicatesAndLoops() async throws {
        let network = LoopbackNetwork()
        let (router, run) = try await Self.relay(.random(), network: network)
        defer { run.cancel() }
        let (x, y, o, z) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await Self.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await Self.rawPeer(y, address: "Y", network: network)
        var (peerX, peerY) = (rawX, rawY)
        defer {
            Task {
                await runningX.stop()
                await runningY.stop()
            }
        }

        // Refused: unsealed, and TTL 1. Then taken into custody: sealed, TTL 7.
        let id = MessageID.random()
        try await peerX.send(Self.data(1, .random(), origin: o, destination: z, sealed: false))
        try await peerX.send(Self.data(2, .random(), origin: o, destination: z, ttl: 1))
        try await peerX.send(Self.data(3, id, origin: o, destination: z))
        let ack = try #require(try await peerX.receiveAck())
        #expect(ack.cumulative == 0 && ack.selective == [3])
        let held = try #require(await router.status(of: id))
        #expect(held.status == .queued && held.origin == o)  // no route to Z yet: held
        var stats = await router.stats()
        #expect(stats.relayRefused == ["unsealed": 1, "ttlExhausted": 1])
        #expect(stats.relayAccepted == 1)

        // Y announces Z: R learns the route and hands the message on, TTL − 1.
        let signerZ = TestReceiptSigner(peer: z)
        try await peerY.send(AnnounceTests.announce(z, 1, hops: 1, signer: signerZ))
        var forwarded: DataFrame?
        while forwarded == nil, let segment = try await peerY.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment) { forwarded = frame }
        }
        let frame = try #require(forwarded)
        #expect(frame.messageID == id && frame.origin == o && frame.destination == z && frame.ttl == 6)
        #expect(frame.flags == DataFrame.sealedFlag && frame.payload == [0xE0, 0x01, 0x02])
        try await peerY.send(.ack(AckFrame(cumulative: frame.sequence)))
        for _ in 0..<1000 where await router.status(of: id)?.status != .relayed {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await router.status(of: id)?.status == .relayed)

        // X's retry (its ack was lost) is a duplicate: acknowledged. The same message
        // coming back from Y went round a loop: refused, so Y keeps it.
        try await peerX.send(Self.data(4, id, origin: o, destination: z))
        #expect(try #require(try await peerX.receiveAck()).selective.contains(4))
        try await peerY.send(Self.data(1, id, origin: o, destination: z))
        for _ in 0..<1000 where await router.stats().relayRefused["loop"] == nil {
            try await Task.sleep(for: .milliseconds(10))
        }
        stats = await router.stats()
        #expect(stats.relayRefused["loop"] == 1)
        #expect(stats.relayAccepted == 1)
        #expect(stats.messagesRelayed == 1)
        #expect(stats.messagesReceived == 0)

        // From X again, but with a lower TTL: no retry of X's hop — it went round a loop
        // back through X. R's route leads to Y, not X, so R takes it again and hands it
        // to Y (acknowledging it as a retry would drop the copy still moving).
        try await peerX.send(Self.data(5, id, origin: o, destination: z, ttl: 3))
        var again: DataFrame?
        while again == nil, let segment = try await peerY.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment), frame.messageID == id { again = frame }
        }
        #expect(try #require(again).ttl == 2)
        #expect(await router.stats().relayAccepted == 2)
        #expect(await router.stats().duplicatesDropped == 1)
    }

    /// The loop rule across a restart: the relay's queue (kept, as a node's store is)
    /// remembers which neighbour each relayed message came from and with which TTL, so
    /// after the router restarts, a copy coming back from another neighbour is still
    /// refused as a loop, and one coming back round a loop through the first neighbour
    /// (a lower TTL) is taken into custody again — acknowledging either as a retry would
    /// let its holder drop the last moving copy.
    @Test(.timeLimit(.minutes(3))) func theLoopRuleHoldsAfterARestart() async throws {
        let network = LoopbackNetwork()
        let r = PeerID.random()
        let queue = InMemoryOutboundQueue()
        func start() async throws -> (Router, Task<Void, any Error>) {
            try await Self.relay(r, network: network, queue: queue)
        }
        let (x, y, o, z) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
        var (router, run) = try await start()
        var (peerX, runningX) = try await Self.rawPeer(x, address: "X", network: network)
        var (peerY, runningY) = try await Self.rawPeer(y, address: "Y", network: network)
        // X hands R a message for Z; Y announces Z; R hands it to Y, which acknowledges.
        let id = MessageID.random()
        try await peerX.send(Self.data(1, id, origin: o, destination: z))
        #expect(try #require(try await peerX.receiveAck()).cumulative == 1)
        try await peerY.send(AnnounceTests.announce(z, 1, hops: 1, signer: TestReceiptSigner(peer: z)))
        var forwarded: DataFrame?
        while forwarded == nil, let segment = try await peerY.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment) { forwarded = frame }
        }
        try await peerY.send(.ack(AckFrame(cumulative: try #require(forwarded).sequence)))
        for _ in 0..<1000 where await router.status(of: id)?.status != .relayed {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await router.status(of: id)?.status == .relayed)

        // R restarts on the same queue; X and Y link again.
        await router.shutdown()
        run.cancel()
        await runningX.stop()
        await runningY.stop()
        (router, run) = try await start()
        defer { run.cancel() }
        (peerX, runningX) = try await Self.rawPeer(x, address: "X", network: network)
        (peerY, runningY) = try await Self.rawPeer(y, address: "Y", network: network)
        let transports = [runningX, runningY]
        defer { Task { for transport in transports { await transport.stop() } } }
        // Y announces Z again, so R's route leads to Y. The copy back from Y went round
        // a loop: refused. X's retry is a duplicate.
        try await peerY.send(AnnounceTests.announce(z, 2, hops: 1, signer: TestReceiptSigner(peer: z)))
        try await eventually("R routes to Z through Y") {
            await router.routes().first { $0.destination == z }?.nextHop == y
        }
        try await peerY.send(Self.data(1, id, origin: o, destination: z))
        for _ in 0..<1000 where await router.stats().relayRefused["loop"] == nil {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await router.stats().relayRefused == ["loop": 1])
        try await peerX.send(Self.data(1, id, origin: o, destination: z))
        #expect(try #require(try await peerX.receiveAck()).cumulative == 1)
        #expect(await router.stats().duplicatesDropped == 1)
        // From X with a lower TTL: round a loop back through X, not a retry. R's route
        // leads to Y, so R takes it again and hands it to Y.
        try await peerX.send(Self.data(2, id, origin: o, destination: z, ttl: 4))
        var again: DataFrame?
        while again == nil, let segment = try await peerY.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment), frame.messageID == id { again = frame }
        }
        #expect(try #require(again).ttl == 3)
        #expect(await router.stats().relayAccepted == 1)
        #expect(await router.stats().duplicatesDropped == 1)
    }

    /// Rule 3(a) once the routes moved: a copy coming back from Y, while R's own route
    /// to Z still leads to Y, is refused (Y keeps it); once R's route leads elsewhere
    /// (W announced a newer sequence), the next copy from Y is taken into custody again
    /// and handed to W — without this the copy would stay with Y for as long as Y's
    /// route points at R.
    @Test(.timeLimit(.minutes(3))) func aLoopedCopyIsTakenBackOnceTheRouteMoved() async throws {
        let network = LoopbackNetwork()
        let (router, run) = try await Self.relay(.random(), network: network)
        defer { run.cancel() }
        let (x, y, w, o, z) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await Self.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await Self.rawPeer(y, address: "Y", network: network)
        let (rawW, runningW) = try await Self.rawPeer(w, address: "W", network: network)
        var (peerX, peerY, peerW) = (rawX, rawY, rawW)
        let transports = [runningX, runningY, runningW]
        defer { Task { for transport in transports { await transport.stop() } } }
        let signerZ = TestReceiptSigner(peer: z)

        // X → R → Y, as in custodyDuplicatesAndLoops.
        let id = MessageID.random()
        try await peerY.send(AnnounceTests.announce(z, 1, hops: 1, signer: signerZ))
        try await peerX.send(Self.data(1, id, origin: o, destination: z))
        #expect(try #require(try await peerX.receiveAck()).cumulative == 1)
        var forwarded: DataFrame?
        while forwarded == nil, let segment = try await peerY.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment) { forwarded = frame }
        }
        try await peerY.send(.ack(AckFrame(cumulative: try #require(forwarded).sequence)))
        try await eventually("R relayed the message to Y") { await router.status(of: id)?.status == .relayed }

        // Back from Y while R's route still leads to Y: refused.
        try await peerY.send(Self.data(1, id, origin: o, destination: z, ttl: 5))
        try await eventually("R refused the looped copy") { await router.stats().relayRefused["loop"] == 1 }

        // W announces a newer sequence: R's route now leads to W. Y's retry is taken
        // into custody (acknowledged) and handed to W, TTL − 1.
        try await peerW.send(AnnounceTests.announce(z, 2, hops: 1, signer: signerZ))
        try await eventually("R routes to Z through W") {
            await router.routes().first { $0.destination == z }?.nextHop == w
        }
        try await peerY.send(Self.data(2, id, origin: o, destination: z, ttl: 5))
        var acked = false
        while !acked, let ack = try await peerY.receiveAck() {
            acked = ack.selective.contains(2) || ack.cumulative >= 2
        }
        var handed: DataFrame?
        while handed == nil, let segment = try await peerW.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment), frame.messageID == id { handed = frame }
        }
        #expect(try #require(handed).ttl == 4)
        #expect(await router.stats().relayRefused == ["loop": 1])
        #expect(await router.stats().relayAccepted == 2)
    }

    /// Rule 3(b) for receipts: R's receipt is final at R (`delivered`) once its first hop
    /// took it, so a copy of it coming back round a loop is the one still moving. Taken
    /// back and sent again when R would send it another way — never dropped as a
    /// duplicate, which lost receipts in the simulator.
    @Test(.timeLimit(.minutes(3))) func anOwnReceiptComingBackIsTakenBack() async throws {
        let network = LoopbackNetwork()
        let r = PeerID.random()
        let (router, run) = try await Self.relay(r, network: network)
        defer { run.cancel() }
        let (x, y) = (PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await Self.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await Self.rawPeer(y, address: "Y", network: network)
        var (peerX, peerY) = (rawX, rawY)
        let transports = [runningX, runningY]
        defer { Task { for transport in transports { await transport.stop() } } }

        // X's own message to R (unsealed on its own link): R takes it and answers with
        // a receipt, which X acknowledges.
        let id = MessageID.random()
        try await peerX.send(Self.data(1, id, origin: x, destination: r, sealed: false))
        var receipt: DataFrame?
        while receipt == nil, let segment = try await peerX.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment), frame.flags & DataFrame.receiptFlag != 0 {
                receipt = frame
            }
        }
        let first = try #require(receipt)
        try await peerX.send(.ack(AckFrame(cumulative: first.sequence)))
        try await eventually("R's receipt is delivered to its hop") {
            await router.status(of: first.messageID)?.status == .delivered
        }

        // The receipt comes back from Y (sealed, as relays carry it): R's next hop for X
        // is X itself, not Y, so R takes it and sends it to X again.
        try await peerY.send(
            .data(
                DataFrame.whole(
                    sequence: 1,
                    messageID: first.messageID,
                    origin: r,
                    destination: x,
                    ttl: 5,
                    flags: DataFrame.receiptFlag | DataFrame.sealedFlag,
                    payload: first.payload
                )
            )
        )
        #expect(try #require(try await peerY.receiveAck()).cumulative == 1)
        var again: DataFrame?
        while again == nil, let segment = try await peerX.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment), frame.messageID == first.messageID { again = frame }
        }
        #expect(try #require(again).flags & DataFrame.receiptFlag != 0)
        #expect(await router.stats().duplicatesDropped == 0)
    }

    /// Rule 3(b) for messages: R's own message, handed to Y (`sent`, waiting for its
    /// receipt), comes back from Y. While R's route to Z leads to Y it is refused (Y
    /// keeps it); once X offers a newer route, Y's next copy is taken back into custody
    /// (acknowledged; R's record queued again, still R's own) and handed to X. Without
    /// this Y held it, retrying R, for as long as Y's route pointed at R.
    @Test(.timeLimit(.minutes(3))) func anOwnSentMessageComingBackIsTakenBackOnceTheRouteMoved() async throws {
        let network = LoopbackNetwork()
        let (router, run) = try await Self.relay(.random(), network: network)
        defer { run.cancel() }
        let (x, y, z) = (PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await Self.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await Self.rawPeer(y, address: "Y", network: network)
        var (peerX, peerY) = (rawX, rawY)
        let transports = [runningX, runningY]
        defer { Task { for transport in transports { await transport.stop() } } }
        let signerZ = TestReceiptSigner(peer: z)

        try await peerY.send(AnnounceTests.announce(z, 1, hops: 1, signer: signerZ))
        try await eventually("R routes to Z through Y") {
            await router.routes().first { $0.destination == z }?.nextHop == y
        }
        let id = try await router.send(to: z, payload: [7, 7, 7])
        var sent: DataFrame?
        while sent == nil, let segment = try await peerY.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment), frame.messageID == id { sent = frame }
        }
        let copy = try #require(sent)
        try await peerY.send(.ack(AckFrame(cumulative: copy.sequence)))
        try await eventually("R's message is sent") { await router.status(of: id)?.status == .sent }
        let digest = try #require(await router.status(of: id)).contentDigest
        #expect(!digest.isEmpty)

        // Back from Y while R's route still leads to Y: refused.
        var back = copy
        (back.sequence, back.ttl) = (1, 5)
        try await peerY.send(.data(back))
        try await eventually("R refused its own copy") { await router.stats().relayRefused["loop"] == 1 }
        #expect(await router.status(of: id)?.status == .sent)

        // X offers a newer route: Y's retry is taken back and goes to X.
        try await peerX.send(AnnounceTests.announce(z, 2, hops: 1, signer: signerZ))
        try await eventually("R routes to Z through X") {
            await router.routes().first { $0.destination == z }?.nextHop == x
        }
        back.sequence = 2
        try await peerY.send(.data(back))
        var acked = false
        while !acked, let ack = try await peerY.receiveAck() {
            acked = ack.selective.contains(2) || ack.cumulative >= 2
        }
        var handed: DataFrame?
        while handed == nil, let segment = try await peerX.receiveSegment() {
            if case .data(let frame) = try Frame.decode(segment), frame.messageID == id { handed = frame }
        }
        let onward = try #require(handed)
        #expect(onward.origin == router.localPeerID && onward.payload == copy.payload)
        let record = try #require(await router.status(of: id))
        // Still its own, and its receipt is still checked against the same content.
        #expect(record.origin == nil && record.status == .queued && record.contentDigest == digest)
        #expect(await router.stats().relayRefused == ["loop": 1])
    }
}
