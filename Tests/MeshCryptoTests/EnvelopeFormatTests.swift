import Logging
import MeshCore
import MeshCrypto
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// The version policy for sealed envelopes (docs/PROTOCOL.md §A.11, §B.3), with real
/// routers and real envelopes: a node seals format 2 to every destination but one
/// whose handshake announced no `sealed_v2`, which gets format 1; and it refuses a
/// format-1 envelope from an origin known to seal format 2 (a relay replaying an old
/// envelope under a fresh ID), while format 1 from a node that does not speak format 2
/// is still delivered.
@Suite struct EnvelopeFormatTests {
    static func node(
        _ name: String,
        network: LoopbackNetwork,
        features: Capabilities = .all
    ) async throws -> MaliciousRelayTests.Node {
        let identity = NodeIdentity.generate()
        var logger = Logger(label: name)
        logger.logLevel = .critical
        var configuration = RouterConfiguration(
            escalation: EscalationConfiguration(ackTimeoutMin: .seconds(20), ackTimeoutMax: .seconds(30)),
            reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
            keepaliveInterval: .seconds(3600),
            sealing: .always
        )
        configuration.features = features
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: identity.peerID),
            configuration: configuration,
            sealer: EnvelopeSealer(identity: identity),
            receipts: IdentityReceiptSigner(identity: identity),
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: name, network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        try await eventually("\(name) runs") { await router.transportStatus().first?.state == .running }
        return MaliciousRelayTests.Node(identity: identity, router: router, run: run)
    }

    /// What `node` delivered, by origin.
    static func collect(_ node: MaliciousRelayTests.Node) -> (MaliciousRelayTests.Received, Task<Void, Never>) {
        let received = MaliciousRelayTests.Received()
        let task = Task {
            while let message = await node.router.incoming.receive() {
                received.ids.withLock { $0[message.from, default: []].append(message.id) }
            }
        }
        return (received, task)
    }

    /// A sends sealed messages (sealing `always`) to N, which speaks format 2, and to O,
    /// which does not announce `sealed_v2` and refuses format 2 as a node of an earlier
    /// release would: both are delivered, with their receipts, and O refused nothing.
    @Test(.timeLimit(.minutes(3))) func formatOneOnlyToAPeerThatDidNotAnnounceIt() async throws {
        let network = LoopbackNetwork()
        let a = try await Self.node("A", network: network)
        let n = try await Self.node("N", network: network)
        let o = try await Self.node("O", network: network, features: Capabilities.all.subtracting(.sealedV2))
        defer { for node in [a, n, o] { node.run.cancel() } }
        await a.router.connect(to: PeerHint(transport: "lo", address: "N"))
        await a.router.connect(to: PeerHint(transport: "lo", address: "O"))
        try await eventually("A is linked to N and O") { await a.router.peers().count == 2 }
        for round in 0..<2 {
            for target in [n, o] {
                let id = try await a.router.send(to: target.peer, payload: [UInt8(round)])
                let record = try await a.router.waitForStatus(of: id, until: .delivered, timeout: .seconds(20))
                #expect(record.status == .delivered && record.flags & DataFrame.sealedFlag != 0)
            }
            // And back: O seals format 1 to everyone; A takes it from a node that
            // does not speak format 2.
            let back = try await o.router.send(to: a.peer, payload: [UInt8(100 + round)])
            #expect(
                try await o.router.waitForStatus(of: back, until: .delivered, timeout: .seconds(20)).status
                    == .delivered
            )
        }
        for node in [a, n, o] {
            #expect(await node.router.stats().sealedMessagesRejected.isEmpty)
        }
        for node in [a, n, o] { await node.router.shutdown() }
    }

    /// M, linked to B, replays envelopes under fresh IDs. A format-1 envelope of A's
    /// (A announced `sealed_v2` to B) is refused as `envelopeDowngraded`; one of O's
    /// (O did not) is delivered; Q, never linked to B, is taken at its word until B
    /// opened a format-2 envelope of Q's, after which Q's format 1 is refused too.
    @Test(.timeLimit(.minutes(3))) func formatOneFromAnOriginThatSealsFormatTwoIsARefusedReplay() async throws {
        let network = LoopbackNetwork()
        let a = try await Self.node("A", network: network)
        let b = try await Self.node("B", network: network)
        let o = try await Self.node("O", network: network, features: Capabilities.all.subtracting(.sealedV2))
        defer { for node in [a, b, o] { node.run.cancel() } }
        let (received, sink) = Self.collect(b)
        defer { sink.cancel() }
        await a.router.connect(to: PeerHint(transport: "lo", address: "B"))
        await o.router.connect(to: PeerHint(transport: "lo", address: "B"))
        try await eventually("B is linked to A and O") { await b.router.peers().count == 2 }

        let m = PeerID.random()
        let mTransport = LoopbackTransport(
            name: "lo",
            address: "M",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(mTransport, localPeerID: m)
        defer { Task { await running.stop() } }
        var toB = try await MaliciousRelayTests.link(from: mTransport, as: m, to: "B")
        let q = NodeIdentity.generate()
        var sequence: UInt32 = 0
        func inject(_ envelope: [UInt8], origin: PeerID, id: MessageID) async throws {
            sequence += 1
            try await toB.send(
                .data(
                    DataFrame.whole(
                        sequence: sequence,
                        messageID: id,
                        origin: origin,
                        destination: b.peer,
                        flags: DataFrame.sealedFlag,
                        payload: envelope
                    )
                )
            )
            try await toB.send(.ping(nonce: UInt64(sequence)))
            let nonce = UInt64(sequence)
            _ = try await MaliciousRelayTests.next(from: &toB) { if case .pong(nonce) = $0 { true } else { nil } }
        }
        func formatOne(from identity: NodeIdentity) throws -> [UInt8] {
            try Envelope.seal(Array("old".utf8), to: b.peer, from: identity)
        }

        let fromA = MessageID.random()
        try await inject(try formatOne(from: a.identity), origin: a.peer, id: fromA)
        let fromO = MessageID.random()
        try await inject(try formatOne(from: o.identity), origin: o.peer, id: fromO)
        let qFirst = MessageID.random()
        try await inject(try formatOne(from: q), origin: q.peerID, id: qFirst)
        let qBound = MessageID.random()
        let bound = try Envelope.seal(
            Array("new".utf8),
            to: b.peer,
            from: q,
            binding: SealBinding(messageID: qBound, flags: 0),
            createdMillis: EnvelopeSealer.wallClockMillis()
        )
        try await inject(bound, origin: q.peerID, id: qBound)
        let qAgain = MessageID.random()
        try await inject(try formatOne(from: q), origin: q.peerID, id: qAgain)

        try await eventually("B delivered O's and Q's first two") {
            received.ids.withLock { $0[o.peer] == [fromO] && $0[q.peerID] == [qFirst, qBound] }
        }
        #expect(await b.router.stats().sealedMessagesRejected == ["envelopeDowngraded": 2])
        #expect(received.ids.withLock { $0[a.peer] } == nil)
        #expect(received.ids.withLock { $0[q.peerID] } == [qFirst, qBound])
        for node in [a, b, o] { await node.router.shutdown() }
    }
}
