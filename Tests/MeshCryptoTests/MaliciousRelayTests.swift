import Logging
import MeshCore
import MeshCrypto
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Issue 13's malicious relay, in one run: M sits on the only path between A and C and
/// speaks the wire protocol by hand (`RawPeer`). Real Ed25519 identities sign the
/// announcements and receipts, real sealed envelopes (§B.3) carry the messages end to
/// end. M forges an announcement and replays one, alters, forges and replays the message
/// and its receipt, and floods C with relay requests. Forged routes and altered
/// envelopes are rejected, replays are dropped, the flood is held to M's share of C's
/// relay budget, and honest traffic (A→C through M once M forwards it; H→D through C)
/// still arrives exactly once.
@Suite struct MaliciousRelayTests {
    struct Node: Sendable {
        var identity: NodeIdentity
        var router: Router
        var run: Task<Void, any Error>
        var peer: PeerID { identity.peerID }
    }

    /// What each sink received, in order.
    final class Received: Sendable {
        let ids = Mutex<[PeerID: [MessageID]]>([:])
    }

    static func node(_ name: String, network: LoopbackNetwork, limits: RelayLimits = .init()) async throws -> Node {
        let identity = NodeIdentity.generate()
        var logger = Logger(label: name)
        logger.logLevel = .critical
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: identity.peerID),
            configuration: RouterConfiguration(
                escalation: EscalationConfiguration(ackTimeoutMin: .seconds(20), ackTimeoutMax: .seconds(30)),
                reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
                keepaliveInterval: .seconds(3600),
                relayLimits: limits
            ),
            sealer: EnvelopeSealer(identity: identity),
            receipts: IdentityReceiptSigner(identity: identity),
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: name, network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }
        return Node(identity: identity, router: router, run: run)
    }

    /// M's link to `address`, after the plaintext hellos.
    static func link(from transport: LoopbackTransport, as m: PeerID, to address: String) async throws -> RawPeer {
        let peer = RawPeer(link: try await transport.dial(PeerHint(transport: "lo", address: address)))
        try await peer.sendPlaintextHello(as: m)
        _ = try #require(try await peer.link.receive())  // the router's hello
        return peer
    }

    /// Reads frames from `peer` until one matches (every other frame is dropped).
    static func next<T>(from peer: inout RawPeer, _ match: (Frame) -> T?) async throws -> T {
        guard let found = try await peer.next(matching: match) else {
            throw MeshError(.linkClosed, "the router closed M's link")
        }
        return found
    }

    @Test(.timeLimit(.minutes(3))) func forgedRoutesAlteredEnvelopesReplaysAndFloodsFromARelay() async throws {
        let network = LoopbackNetwork()
        // C relays for at most 40 messages an hour, a quarter (10) for any one neighbour.
        let a = try await Self.node("A", network: network)
        let c = try await Self.node("C", network: network, limits: RelayLimits(maxPerHour: 40, neighbourShare: 0.25))
        let (h, d) = (try await Self.node("H", network: network), try await Self.node("D", network: network))
        defer { for node in [a, c, h, d] { node.run.cancel() } }
        let received = Received()
        let sinks = [
            Task {
                while let message = await c.router.incoming.receive() {
                    received.ids.withLock { $0[c.peer, default: []].append(message.id) }
                }
            },
            Task {
                while let message = await d.router.incoming.receive() {
                    received.ids.withLock { $0[d.peer, default: []].append(message.id) }
                }
            },
        ]
        defer { for sink in sinks { sink.cancel() } }

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
        var toA = try await Self.link(from: mTransport, as: m, to: "A")
        var toC = try await Self.link(from: mTransport, as: m, to: "C")

        // Routes. C's and A's own announcements reach M; M forges one for C signed with
        // its own key, replays one, and relays the genuine ones, one hop further.
        let announceC = try await Self.next(from: &toC) {
            if case .announce(let f) = $0, f.origin == c.peer { f } else { nil }
        }
        let announceA = try await Self.next(from: &toA) {
            if case .announce(let f) = $0, f.origin == a.peer { f } else { nil }
        }
        let forged = AnnounceFrame(
            origin: c.peer,
            sequence: announceC.sequence + 100,
            hops: 1,
            signature: mallory.sign(AnnounceFrame.signedBytes(origin: c.peer, sequence: announceC.sequence + 100))
        )
        try await toA.send(.announce(forged))
        var relayedC = announceC
        relayedC.hops += 1
        try await toA.send(.announce(relayedC))
        try await toA.send(.announce(relayedC))  // replayed: not news, ignored
        var relayedA = announceA
        relayedA.hops += 1
        try await toC.send(.announce(relayedA))
        try await eventually("A routes to C through M, C to A through M", attempts: 1500) {
            let toC = await a.router.routes().first { $0.destination == c.peer }
            let toA = await c.router.routes().first { $0.destination == a.peer }
            return toC?.nextHop == m && toA?.nextHop == m
        }
        let statsA = await a.router.stats()
        #expect(statsA.announcesRejected["badSignature"] == 1)
        #expect(statsA.announcesRejected.count == 1, "\(statsA.announcesRejected)")
        #expect(statsA.announcesIgnored >= 1)
        #expect(await a.router.routes().first { $0.destination == c.peer }?.sequence == announceC.sequence)

        // A sends to C. M takes custody (acknowledges the hop), then hands C an altered
        // copy, one it sealed itself claiming A as sender, the genuine one, and the
        // genuine one again.
        let id = try await a.router.send(to: c.peer, payload: Array("hello C, from A".utf8))
        let data = try await Self.next(from: &toA) { if case .data(let f) = $0, f.messageID == id { f } else { nil } }
        #expect(data.flags & DataFrame.sealedFlag != 0)  // relayed: sealed end to end
        try await toA.send(.ack(AckFrame(cumulative: data.sequence)))
        var sequence: UInt32 = 0
        // Acknowledgements are not waited for here: reading them would skip (and lose)
        // the other frames the router sends meanwhile, such as the receipt.
        func forward(_ frame: DataFrame, to peer: RawPeer) async throws {
            sequence += 1
            var copy = frame
            copy.sequence = sequence
            copy.ttl -= 1
            try await peer.send(.data(copy))
        }
        var altered = data
        altered.payload[altered.payload.count / 2] ^= 0x40
        let sealedByM = try EnvelopeSealer(identity: mallory).seal(
            Array("hello C, from A (not really)".utf8),
            to: c.peer
        )
        var forgedData = data
        forgedData.payload = sealedByM
        forgedData.messageLength = UInt32(sealedByM.count)
        for copy in [altered, forgedData, data, data] { try await forward(copy, to: toC) }
        try await eventually("C delivered A's message", attempts: 1500) {
            received.ids.withLock { $0[c.peer] ?? [] } == [id]
        }
        let rejected = await c.router.stats().sealedMessagesRejected
        #expect(rejected.values.reduce(0, +) == 2, "\(rejected)")
        #expect(rejected["senderMismatch"] == 1)

        // C's signed receipt comes back through M: altered, then genuine, then replayed.
        let receipt = try await Self.next(from: &toC) {
            if case .data(let f) = $0, f.flags & DataFrame.receiptFlag != 0, f.destination == a.peer { f } else { nil }
        }
        try await toC.send(.ack(AckFrame(cumulative: receipt.sequence)))
        var alteredReceipt = receipt
        alteredReceipt.payload[alteredReceipt.payload.count - 1] ^= 0x01
        sequence = 0
        try await forward(alteredReceipt, to: toA)
        try await eventually("A rejected the altered receipt", attempts: 1500) {
            let stats = await a.router.stats()
            return stats.sealedMessagesRejected.values.reduce(0, +) + stats.receiptsRejected.values.reduce(0, +) == 1
        }
        #expect(await a.router.status(of: id)?.status != .delivered)
        try await forward(receipt, to: toA)
        try await forward(receipt, to: toA)
        try await eventually("A sees its message delivered", attempts: 1500) {
            await a.router.status(of: id)?.status == .delivered
        }
        #expect(received.ids.withLock { $0[c.peer] ?? [] } == [id])  // exactly once
        #expect(await a.router.stats().receiptsAccepted == 1)

        // The flood: M offers C 30 sealed messages for nowhere while H sends 10 to D
        // through C. M's share (10) is taken, the rest refused; H's all arrive.
        for (node, address) in [(h, "C"), (d, "C")] {
            await node.router.connect(to: PeerHint(transport: "lo", address: address))
        }
        try await eventually("H routes to D through C", attempts: 1500) {
            await h.router.routes().contains { $0.destination == d.peer && $0.nextHop == c.peer }
        }
        let nowhere = NodeIdentity.generate().peerID
        let honest = Task {
            var ids: [MessageID] = []
            for index in 0..<10 {
                ids.append(try await h.router.send(to: d.peer, payload: Array("honest \(index)".utf8)))
            }
            return ids
        }
        for index in 0..<30 {
            let junk = try EnvelopeSealer(identity: mallory).seal([UInt8(index)], to: nowhere)
            sequence += 1
            let frame = DataFrame.whole(
                sequence: UInt32(1000 + index),
                origin: m,
                destination: nowhere,
                flags: DataFrame.sealedFlag,
                payload: junk
            )
            try await toC.send(.data(frame))
        }
        // C answers a PING only after it handled every frame before it on the link.
        try await toC.send(.ping(nonce: 4242))
        _ = try await Self.next(from: &toC) { if case .pong(4242) = $0 { true } else { nil } }
        let honestIDs = try await honest.value
        try await eventually("every honest message reaches D", attempts: 1500) {
            Set(received.ids.withLock { $0[d.peer] ?? [] }) == Set(honestIDs)
        }
        let statsC = await c.router.stats()
        #expect(statsC.relayRefused == ["neighbourShare": 20], "\(statsC.relayRefused)")
        #expect(received.ids.withLock { $0[d.peer]?.count } == 10)  // once each
        #expect(received.ids.withLock { $0[c.peer] ?? [] } == [id])  // nothing of M's in C's inbox
        for node in [a, c, h, d] { await node.router.shutdown() }
    }
}
