import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Route announcements from a hostile neighbour (docs/PROTOCOL.md §A.5), driven frame
/// by frame from a raw peer: forged, foreign, self-claiming, out-of-range and replayed
/// announcements are rejected and counted by reason; a flood is held to the link's
/// share while an honest neighbour's messages still flow. Time is a ManualClock that
/// never moves, so the share is exactly the inbound burst.
@Suite struct AnnounceTests {
    typealias RawPeer = ReceiverRulesTests.RawPeer

    static func announce(_ origin: PeerID, _ sequence: UInt64, hops: UInt8 = 1, signer: TestReceiptSigner) -> Frame {
        .announce(
            AnnounceFrame(
                origin: origin,
                sequence: sequence,
                hops: hops,
                signature: signer.sign(AnnounceFrame.signedBytes(origin: origin, sequence: sequence))
            )
        )
    }

    @Test func announceFramesRoundTripAndRejectTrailingBytes() throws {
        let signer = TestReceiptSigner(peer: .random())
        let frame = Self.announce(signer.peer, 42, hops: 3, signer: signer)
        let bytes = frame.encoded()
        #expect(bytes.count == 4 + AnnounceFrame.bodySize)
        #expect(bytes[1] == 5)
        #expect(try Frame.decode(bytes) == frame)
        #expect(throws: MeshError.self) { try Frame.decode(bytes + [0]) }
        #expect(throws: MeshError.self) { try Frame.decode(Array(bytes.dropLast())) }
    }

    @Test(.timeLimit(.minutes(3))) func hostileAnnouncementsAreRejectedCountedAndHeldToTheirShare() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        var logger = Logger(label: "r")
        logger.logLevel = .warning
        let r = PeerID.random()
        let routing = RoutingConfiguration(announcesPerSecond: 10, announceBurst: 32)
        let configuration = RouterConfiguration(keepaliveInterval: .seconds(3600), routing: routing)
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: configuration,
            sealer: StandInSealer(peer: r),
            receipts: TestReceiptSigner(peer: r),
            clock: clock,
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        defer { run.cancel() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }

        // The hostile neighbour X, speaking the wire protocol by hand.
        let x = PeerID.random()
        let signerX = TestReceiptSigner(peer: x)
        let transport = LoopbackTransport(
            name: "lo",
            address: "X",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(transport, localPeerID: x)
        defer { Task { await running.stop() } }
        let peer = RawPeer(link: try await transport.dial(PeerHint(transport: "lo", address: "R")))
        try await peer.send(segment: Array("SCM0".utf8) + [Frame.version] + x.bytes)
        _ = try #require(try await peer.link.receive())  // R's hello
        // Read what R sends, noting its PONGs: R answers a PING only after it handled
        // every frame before it on the link.
        let pongs = Mutex<Set<UInt64>>([])
        let drain = Task { [link = peer.link] in
            var reader = RawPeer(link: link)
            while let segment = try? await reader.receiveSegment() {
                if case .pong(let nonce) = try? Frame.decode(segment) { pongs.withLock { _ = $0.insert(nonce) } }
            }
        }
        defer { drain.cancel() }
        try await waitUntil("R is linked to X") { await router.peers().contains { $0.peer == x } }

        // Y is a real node elsewhere whose genuine announcements X has seen.
        let y = PeerID.random()
        let signerY = TestReceiptSigner(peer: y)
        try await peer.send(Self.announce(y, 10, hops: 2, signer: signerY))  // genuine: accepted
        try await peer.send(Self.announce(y, 11, hops: 1, signer: signerX))  // Y's origin, X's signature
        let garbled = AnnounceFrame(origin: x, sequence: 5, hops: 1, signature: [UInt8](repeating: 7, count: 64))
        try await peer.send(.announce(garbled))  // X's own, signature garbage
        try await peer.send(Self.announce(r, 99, signer: signerX))  // about R itself
        try await peer.send(Self.announce(y, 12, hops: 0, signer: signerY))  // hop count 0
        try await peer.send(Self.announce(y, 13, hops: 8, signer: signerY))  // over max hops (7)
        try await peer.send(Self.announce(y, 9, hops: 1, signer: signerY))  // replayed older sequence
        try await peer.send(Self.announce(y, 10, hops: 2, signer: signerY))  // the same again: not better
        try await waitUntil("R handled X's 8 announcements") {
            let stats = await router.stats()
            return stats.announcesAccepted + stats.announcesIgnored + stats.announcesRejected.values.reduce(0, +) >= 8
        }
        var stats = await router.stats()
        #expect(stats.announcesRejected == ["badSignature": 2, "aboutSelf": 1, "hopLimit": 2, "stale": 1])
        #expect(stats.announcesAccepted == 1)
        #expect(stats.announcesIgnored == 1)
        let route = try #require(await router.routes().first { $0.destination == y })
        #expect(route.nextHop == x && route.hops == 2 && route.sequence == 10)

        // An honest neighbour H sends messages while X floods genuine-looking
        // announcements (its own, ever newer: each would be a better route).
        let h = PeerID.random()
        let honest = Router(
            security: PlaintextLinkSecurity(localPeerID: h),
            configuration: configuration,
            sealer: StandInSealer(peer: h),
            receipts: TestReceiptSigner(peer: h),
            clock: clock,
            logger: logger
        )
        await honest.add(
            LoopbackTransport(name: "lo", address: "H", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let honestRun = Task { try await honest.run() }
        defer { honestRun.cancel() }
        // Dial only once H's transport runs: a failed dial would back off on a clock
        // that never moves.
        try await eventually("the transport runs") { await honest.transportStatus().first?.state == .running }
        await honest.connect(to: PeerHint(transport: "lo", address: "R"))
        try await waitUntil("H is linked to R") { await honest.peers().contains { $0.peer == r } }
        let inbox = Task {
            var ids: [MessageID] = []
            while ids.count < 20, let message = await router.incoming.receive() { ids.append(message.id) }
            return ids
        }
        let flood = 500
        let flooding = Task {
            for sequence in 1...flood { try await peer.send(Self.announce(x, UInt64(100 + sequence), signer: signerX)) }
        }
        var sent: [MessageID] = []
        for index in 0..<20 { sent.append(try await honest.send(to: r, payload: [UInt8(index)])) }
        try await flooding.value
        #expect(Set(await inbox.value) == Set(sent))
        try await peer.send(.ping(nonce: 77))
        try await waitUntil("R handled the whole flood (and answered the PING after it)") {
            pongs.withLock { $0.contains(77) }
        }
        stats = await router.stats()
        // X's share is the inbound burst (2 × 32, time stands still); the 8 above used
        // part of it, so at most 56 flood frames were read and the rest dropped unread.
        let limited = stats.announcesRejected["rateLimited", default: 0]
        #expect(limited >= flood - (2 * routing.announceBurst - 8))
        #expect(limited <= flood)
        #expect(await router.routes().contains { $0.destination == x && $0.hops == 1 })
    }

}
