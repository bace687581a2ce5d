import Logging
import MeshCore
import MeshCrypto
import MeshTesting
import TestSupport
import Testing
import TransportTCP

/// Issue 40: capabilities in the handshake, unknown frames ignored, the minimal profile
/// (docs/PROTOCOL.md §A.11), with real nodes (Noise XX over TCP on loopback).
@Suite(.serialized) struct ProtocolGrowthTests {
    static func configuration(features: Capabilities = .all, keepalive: Duration = .seconds(30)) -> RouterConfiguration
    {
        var configuration = RouterConfiguration(
            escalation: EscalationConfiguration(
                ackTimeoutMin: .milliseconds(500),
                ackTimeoutMax: .seconds(5),
                maxAttempts: 4
            ),
            reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
            keepaliveInterval: keepalive
        )
        configuration.features = features
        configuration.flood.enabled = true  // as the node's default config has it
        return configuration
    }

    /// A node as `scmesh run` makes one: Noise links, sealed envelopes, signed receipts.
    static func node(_ configuration: RouterConfiguration, listen: [String] = ["127.0.0.1:0"]) async throws -> TCPNode {
        let identity = NodeIdentity.generate()
        let router = Router(
            security: NoiseLinkSecurity(identity: identity),
            configuration: configuration,
            sealer: EnvelopeSealer(identity: identity),
            receipts: IdentityReceiptSigner(identity: identity),
            logger: Logger(label: "node") { _ in SwiftLogNoOpLogHandler() }
        )
        let transport = TCPTransport(configuration: .init(listen: listen))
        await router.add(transport, priority: 30)
        let events = await router.events()
        let run = Task<Void, Never> { _ = try? await router.run() }
        for await event in events where event.kind == .transportStarted || event.kind == .transportUnavailable { break }
        return TCPNode(router: router, transport: transport, run: run)
    }

    /// A minimal peer linked to `node`: it dials (`.initiator`) or the node dials it.
    static func minimalPeer(
        to node: TCPNode,
        role: HandshakeRole,
        capabilities: Capabilities = .none
    ) async throws -> (MinimalPeer, Listening) {
        let listening = try await Listening.start(.init(listen: ["127.0.0.1:0"]))
        let identity = NodeIdentity.generate()
        switch role {
        case .initiator:
            let link = try await listening.transport.dial(PeerHint(transport: "tcp", address: try node.address))
            return (
                try await MinimalPeer.handshake(
                    on: link,
                    role: .initiator,
                    identity: identity,
                    capabilities: capabilities
                ), listening
            )
        case .responder:
            let address = try #require(listening.running.addresses.first)
            await node.router.connect(to: PeerHint(transport: "tcp", address: address, peerID: identity.peerID))
            let link = try await listening.events.nextInboundLink()
            return (
                try await MinimalPeer.handshake(
                    on: link,
                    role: .responder,
                    identity: identity,
                    capabilities: capabilities
                ), listening
            )
        }
    }

    /// The message `router` received next, within the hang guard.
    static func nextMessage(at router: Router) async throws -> InboundMessage? {
        try await within("a message at the node") { await router.incoming.receive() }
    }

    /// A peer that announces no capability, in both dial roles: messages both ways; it
    /// receives no frame outside the minimal profile (the node withholds the rest); its
    /// link stays up for more keepalive intervals than the three after which the node
    /// closes a silent link (the node's `keepalive_interval_ms`, 2 s here), while it only
    /// answers PINGs.
    @Test(.timeLimit(.minutes(3)), arguments: [HandshakeRole.initiator, .responder])
    func minimalPeerExchangesMessagesAndKeepsItsLink(role: HandshakeRole) async throws {
        let node = try await Self.node(Self.configuration(keepalive: .seconds(2)))
        let events = await node.router.events()
        let downs = Task { () -> [String] in
            var reasons: [String] = []
            for await event in events where event.kind == .linkDown { reasons.append(event.reason ?? "-") }
            return reasons
        }
        defer { downs.cancel() }
        var (peer, listening) = try await Self.minimalPeer(to: node, role: role)
        #expect(peer.remoteCapabilities == .all)
        try await eventually("the node lists the minimal peer") {
            await node.router.peers().contains { $0.peer == peer.id }
        }
        let listed = try #require(await node.router.peers().first { $0.peer == peer.id })
        #expect(listed.capabilities.isEmpty)
        #expect(listed.wireVersion == Int(Frame.version))

        // Minimal peer → node: acknowledged and delivered.
        let sequence = try await peer.sendMessage(Array("hello from minimal".utf8))
        #expect(try await peer.waitForAck(of: sequence))
        let inbound = try await Self.nextMessage(at: node.router)
        #expect(inbound?.payload == Array("hello from minimal".utf8))
        #expect(inbound?.from == peer.id)

        // Node → minimal peer: delivered (its hop acknowledgement is delivery: it takes
        // no receipts), unsealed, with no flag it does not know.
        let id = try await node.router.send(to: peer.id, payload: Array("hello minimal".utf8))
        let data = try #require(
            try await peer.next { frame -> DataFrame? in if case .data(let data) = frame { data } else { nil } }
        )
        #expect(data.payload == Array("hello minimal".utf8))
        #expect(data.flags == 0)
        let record = try await node.router.waitForStatus(of: id, until: .delivered, timeout: .seconds(120))
        #expect(record.status == .delivered)

        // Keepalive: the peer only answers; after 4 PINGs (≥ 4 intervals, a silent link
        // is closed after 3) the link is the same link and carries messages.
        let pingsBefore = peer.pingsAnswered
        while peer.pingsAnswered < pingsBefore + 4 {
            guard try await peer.receive() != nil else { break }
        }
        if peer.pingsAnswered < pingsBefore + 4 {
            try await Task.sleep(for: .milliseconds(200))
            downs.cancel()
            Issue.record(
                "the node closed the link after \(peer.pingsAnswered - pingsBefore) PINGs: \(await downs.value)"
            )
            return
        }
        let again = try await peer.sendMessage([7])
        #expect(try await peer.waitForAck(of: again))
        #expect(try await Self.nextMessage(at: node.router)?.payload == [7])

        #expect(peer.receivedOnlyMinimalFrames, "frame types received: \(Set(peer.receivedTypes).sorted())")
        let stats = await node.router.stats()
        // It did have more to say (its announcement, its receipt): withheld, not sent.
        #expect(stats.framesWithheld["receipt", default: 0] >= 1, "withheld: \(stats.framesWithheld)")
        #expect(stats.framesWithheld["announce", default: 0] >= 1, "withheld: \(stats.framesWithheld)")
        #expect(stats.malformedInputs.isEmpty)
        await listening.running.stop()
        await node.stop()
    }

    /// The envelope format follows the peer's `sealed_v2` bit (docs/PROTOCOL.md §B.3,
    /// *Which format*): a node that seals every message (`sealing: always`) sends a
    /// peer that announced nothing format 1, which an implementation of the earlier
    /// revision opens, and a peer that announced `sealed_v2` format 2, bound to the
    /// frame's message ID. Either opens with the peer's key to the payload.
    @Test(.timeLimit(.minutes(3)), arguments: [Capabilities.none, .sealedV2])
    func sealedFormatFollowsThePeersCapabilities(_ capabilities: Capabilities) async throws {
        var configuration = Self.configuration()
        configuration.sealing = .always
        let node = try await Self.node(configuration)
        let listening = try await Listening.start(.init(listen: ["127.0.0.1:0"]))
        let identity = NodeIdentity.generate()
        let link = try await listening.transport.dial(PeerHint(transport: "tcp", address: try node.address))
        var peer = try await MinimalPeer.handshake(
            on: link,
            role: .initiator,
            identity: identity,
            capabilities: capabilities
        )
        try await eventually("the node lists the peer") { await node.router.peers().contains { $0.peer == peer.id } }
        let id = try await node.router.send(to: peer.id, payload: Array("sealed for you".utf8))
        let data = try #require(
            try await peer.next { frame -> DataFrame? in if case .data(let data) = frame { data } else { nil } }
        )
        #expect(data.messageID == id && data.flags == DataFrame.sealedFlag)
        let expected = capabilities.contains(.sealedV2) ? Envelope.boundVersion : Envelope.version
        #expect(data.payload.first == expected)
        let (sender, payload) = try Envelope.open(data.payload, as: identity)
        #expect(sender == node.router.localPeerID && payload == Array("sealed for you".utf8))
        if capabilities.contains(.sealedV2) {
            #expect(try Envelope.binding(of: data.payload)?.binding.messageID == id)
        }
        await listening.running.stop()
        await node.stop()
    }

    /// Frames of unassigned types, and a known optional type for a feature the node
    /// switched off, are ignored and counted; the link stays up and the next DATA is
    /// acknowledged and delivered. A malformed frame of a known type still closes it.
    @Test(.timeLimit(.minutes(3)), arguments: [HandshakeRole.initiator, .responder])
    func unknownAndSwitchedOffFramesAreIgnored(role: HandshakeRole) async throws {
        let node = try await Self.node(Self.configuration(features: Capabilities.all.subtracting([.routing, .topics])))
        // The peer announces every feature: only the node's own switch decides.
        var (peer, listening) = try await Self.minimalPeer(to: node, role: role, capabilities: .all)
        try await peer.send(plaintext: [Frame.version, 0x0D, 0x00, 0x00, 0xDE, 0xAD, 0xBE, 0xEF])
        try await peer.send(plaintext: [Frame.version, 0xFF, 0xFF, 0xFF])
        try await peer.send(.routeRequest(RouteRequestFrame(target: .random(), sequence: 0, hopLimit: 3)))
        let sequence = try await peer.sendMessage([42])
        #expect(try await peer.waitForAck(of: sequence))
        #expect(try await Self.nextMessage(at: node.router)?.payload == [42])
        let stats = await node.router.stats()
        #expect(stats.framesIgnored == ["type_13": 1, "type_255": 1, "route_request": 1])
        #expect(stats.malformedInputs.isEmpty)
        #expect(await node.router.peers().contains { $0.peer == peer.id })
        // Strict for what it knows: a PING with a trailing byte closes the link.
        try await peer.send(plaintext: Frame.ping(nonce: 1).encoded() + [0])
        // Read until the node closes the link; answering a frame that arrived just
        // before the close (a receipt's ACK) may meet the closed link and throw.
        while (try? await peer.receive()) != nil {}
        try await eventually("the node to close the link") {
            await !node.router.peers().contains { $0.peer == peer.id }
        }
        #expect(await node.router.stats().malformedInputs["malformedFrame"] == 1)
        await listening.running.stop()
        await node.stop()
    }

    /// A full node and a node with every optional feature off: messages both ways,
    /// each delivered; each lists the other's features.
    @Test(.timeLimit(.minutes(3))) func fullNodeAndNodeWithEveryFeatureOffExchangeMessages() async throws {
        let full = try await Self.node(Self.configuration())
        let bare = try await Self.node(Self.configuration(features: .none), listen: [])
        await bare.router.connect(
            to: PeerHint(transport: "tcp", address: try full.address, peerID: full.router.localPeerID)
        )
        try await eventually("a link") { await full.router.peers().contains { $0.peer == bare.router.localPeerID } }
        #expect(await full.router.peers().first?.capabilities == [])
        #expect(await bare.router.peers().first?.capabilities == Capabilities.all.names)
        for round in 0..<3 {
            let there = try await full.router.send(to: bare.router.localPeerID, payload: [UInt8(round)])
            #expect(try await Self.nextMessage(at: bare.router)?.payload == [UInt8(round)])
            #expect(
                try await full.router.waitForStatus(of: there, until: .delivered, timeout: .seconds(120)).status
                    == .delivered
            )
            let back = try await bare.router.send(to: full.router.localPeerID, payload: [UInt8(100 + round)])
            #expect(try await Self.nextMessage(at: full.router)?.payload == [UInt8(100 + round)])
            #expect(
                try await bare.router.waitForStatus(of: back, until: .delivered, timeout: .seconds(120)).status
                    == .delivered
            )
        }
        let fullStats = await full.router.stats()
        let bareStats = await bare.router.stats()
        #expect(fullStats.malformedInputs.isEmpty && bareStats.malformedInputs.isEmpty)
        #expect(
            fullStats.framesIgnored.isEmpty && bareStats.framesIgnored.isEmpty,
            "\(fullStats.framesIgnored) \(bareStats.framesIgnored)"
        )
        await bare.stop()
        await full.stop()
    }

    /// A line a – m – c whose middle node speaks the minimal profile (every optional
    /// feature off): a and c learn no route through m, so a message goes out as a flood,
    /// which m receives as an ordinary message and hands to its linked destination;
    /// messages flow end to end both ways, and their receipts come back through m.
    @Test(.timeLimit(.minutes(3))) func lineWithMinimalMiddleNodeCarriesMessagesEndToEnd() async throws {
        let middle = try await Self.node(Self.configuration(features: .none))
        let a = try await Self.node(Self.configuration(), listen: [])
        let c = try await Self.node(Self.configuration(), listen: [])
        let m = middle.router.localPeerID
        await a.router.connect(to: PeerHint(transport: "tcp", address: try middle.address, peerID: m))
        await c.router.connect(to: PeerHint(transport: "tcp", address: try middle.address, peerID: m))
        try await eventually("m linked to both ends") { await middle.router.peers().count == 2 }
        let aID = a.router.localPeerID
        let cID = c.router.localPeerID
        for round in 0..<3 {
            let there = try await a.router.send(to: cID, payload: [UInt8(round)])
            let arrived = try await Self.nextMessage(at: c.router)
            #expect(arrived?.payload == [UInt8(round)] && arrived?.from == aID)
            let back = try await c.router.send(to: aID, payload: [UInt8(100 + round)])
            let returned = try await Self.nextMessage(at: a.router)
            #expect(returned?.payload == [UInt8(100 + round)] && returned?.from == cID)
            // The receipts come back through the minimal node too, which carries them
            // as any sealed message although it speaks no receipts itself.
            for (router, id) in [(a.router, there), (c.router, back)] {
                #expect(
                    try await router.waitForStatus(of: id, until: .delivered, timeout: .seconds(120)).status
                        == .delivered
                )
            }
        }
        #expect(
            await a.router.routes().allSatisfy { $0.destination == m },
            "a learned a route through the minimal node"
        )
        let middleStats = await middle.router.stats()
        #expect(middleStats.messagesRelayed >= 6)
        #expect(middleStats.framesIgnored.isEmpty, "\(middleStats.framesIgnored)")
        await a.stop()
        await c.stop()
        await middle.stop()
    }
}
