import MeshCore
import Testing

@testable import MeshCrypto

/// The SCMesh link handshake (Noise XX + identity proofs) over in-process channels.
@Suite("Noise link security")
struct NoiseLinkSecurityTests {
    @Test("XX over an in-process channel pair: both sides prove their identity and exchange frames")
    func handshakeAndExchange() async throws {
        let alice = NoiseLinkSecurity(identity: .generate())
        let bob = NoiseLinkSecurity(identity: .generate())
        let (a, b) = await handshakePair(initiator: alice, responder: bob, expectedByInitiator: bob.localPeerID)
        let aliceSession = try a.get()
        let bobSession = try b.get()
        #expect(aliceSession.remotePeerID == bob.localPeerID)
        #expect(bobSession.remotePeerID == alice.localPeerID)
        #expect(aliceSession.cipher.overhead == 16)
        for size in [0, 1, 1000, NoiseSessionCipher.maxPlaintextLength] {
            let frame = Sodium.randomBytes(size)
            let sealed = try aliceSession.cipher.seal(frame)
            #expect(sealed.count == size + 16)
            #expect(try bobSession.cipher.open(sealed) == frame)
            let reply = try bobSession.cipher.seal(frame)
            #expect(try aliceSession.cipher.open(reply) == frame)
        }
    }

    @Test("the roles can be swapped: the same node answers as responder and dials as initiator")
    func bothRoles() async throws {
        let alice = NoiseLinkSecurity(identity: .generate())
        let bob = NoiseLinkSecurity(identity: .generate())
        let first = await handshakePair(initiator: alice, responder: bob)
        let second = await handshakePair(initiator: bob, responder: alice)
        #expect(try first.responder.get().remotePeerID == alice.localPeerID)
        #expect(try second.responder.get().remotePeerID == bob.localPeerID)
        #expect(try second.initiator.get().remotePeerID == alice.localPeerID)
    }

    @Test("the wire format: 32-byte message 1, identity proof in messages 2 and 3, prologue SCMesh/1")
    func wireFormat() async throws {
        let alice = NoiseLinkSecurity(identity: .generate())
        let bob = NoiseLinkSecurity(identity: .generate())
        var initiator = try LinkHandshake(security: alice, role: .initiator, context: testContext())
        var responder = try LinkHandshake(security: bob, role: .responder, context: testContext())
        let message1 = try #require(try initiator.start())
        #expect(try responder.start() == nil)
        let message2 = try #require(try responder.receive(message1))
        let message3 = try #require(try initiator.receive(message2))
        #expect(try responder.receive(message3) == nil)
        #expect(message1.count == 32)
        #expect(message2.count == 32 + 48 + IdentityProof.length + 16)
        #expect(message3.count == 48 + IdentityProof.length + 16)
        #expect(initiator.handshakeHash == responder.handshakeHash)

        // An independent Noise implementation (here: the raw HandshakeState) with the
        // documented prologue and payload completes the handshake with a node.
        let independentStatic = X25519KeyPair.generate()
        let independentIdentity = NodeIdentity.generate()
        var independent = try HandshakeState(
            protocol: NoiseProtocol(name: "Noise_XX_25519_ChaChaPoly_SHA256")!,
            role: .initiator,
            prologue: Array("SCMesh/1".utf8),
            localStatic: independentStatic
        )
        var node = try LinkHandshake(security: bob, role: .responder, context: testContext())
        let reply = try #require(try node.receive(try independent.writeMessage()))
        let proof = try independent.readMessage(reply)
        #expect(Array(proof[0..<32]) == bob.localPeerID.bytes)
        #expect(
            NodeIdentity.verify(
                signature: Array(proof[32..<96]),
                message: Array("SCMesh-noise-static-v1".utf8) + independent.remoteStatic!,
                signer: bob.localPeerID
            )
        )
        // Version 1; the context's capabilities (every feature: 0x03FF), big-endian.
        #expect(proof[96] == 1 && proof[97] == 0x03 && proof[98] == 0xFF)
        let myProof =
            independentIdentity.publicKey
            + independentIdentity.sign(Array("SCMesh-noise-static-v1".utf8) + independentStatic.publicKey) + [1, 0, 0]
        #expect(try node.receive(try independent.writeMessage(payload: myProof)) == nil)
        #expect(node.session?.remotePeerID == independentIdentity.peerID)
    }

    @Test("an impostor claiming another identity with its own signature is refused")
    func impostorWrongSigner() async throws {
        let victim = NodeIdentity.generate()
        let mallory = NodeIdentity.generate()
        let noiseStatic = X25519KeyPair.generate()
        let forged = IdentityProof(
            identityKey: victim.publicKey,
            signature: mallory.sign(IdentityProof.context + noiseStatic.publicKey),
            version: 1,
            capabilities: 0
        )
        let impostor = NoiseLinkSecurity(identity: mallory, noiseStatic: noiseStatic, proof: forged)
        let honest = NoiseLinkSecurity(identity: .generate())
        // Impostor answers a dial that expects the victim.
        let dial = await handshakePair(initiator: honest, responder: impostor, expectedByInitiator: victim.peerID)
        #expect(codes(dial.initiator.error) == ["handshakeFailed", "badSignature"])
        // Impostor dials.
        let accept = await handshakePair(initiator: impostor, responder: honest)
        #expect(codes(accept.responder.error) == ["handshakeFailed", "badSignature"])
    }

    @Test("an impostor replaying the victim's genuine proof with its own Noise key is refused")
    func impostorReplayedProof() async throws {
        let victim = NoiseLinkSecurity(identity: .generate())
        let impostor = NoiseLinkSecurity(identity: .generate(), noiseStatic: .generate(), proof: victim.proof)
        let honest = NoiseLinkSecurity(identity: .generate())
        let result = await handshakePair(initiator: honest, responder: impostor)
        #expect(codes(result.initiator.error) == ["handshakeFailed", "badSignature"])
    }

    @Test("a genuine peer that is not the expected one is refused, and the dialler does not reveal itself")
    func expectedPeerMismatch() async throws {
        let alice = NoiseLinkSecurity(identity: .generate())
        let carol = NoiseLinkSecurity(identity: .generate())
        let expected = NodeIdentity.generate().peerID
        let result = await handshakePair(initiator: alice, responder: carol, expectedByInitiator: expected)
        let error = try #require(result.initiator.error as? MeshError)
        #expect(codes(error) == ["handshakeFailed", "peerMismatch"])
        #expect(error.message.contains(expected.short))
        // Carol never got message 3 (alice's identity): her receive ended with the link.
        #expect(codes(result.responder.error) == ["linkClosed"])
    }

    @Test(
        "bad handshake messages give typed errors",
        arguments: [
            ("responder", "31-byte message 1", "malformedHandshake"),
            ("responder", "33-byte message 1", "malformedHandshake"),
            ("responder", "empty message 1", "malformedHandshake"),
            ("initiator", "garbage message 2", "decryptFailed"),
            ("initiator", "truncated message 2", "malformedHandshake"),
            ("initiator", "oversized message 2", "malformedHandshake"),
            ("initiator", "low-order ephemeral in message 2", "invalidKey"),
        ]
    )
    func badMessages(role: String, what: String, expected: String) async throws {
        let node = NoiseLinkSecurity(identity: .generate())
        let inbound: [UInt8]
        switch what {
        case "31-byte message 1": inbound = Sodium.randomBytes(31)
        case "33-byte message 1": inbound = Sodium.randomBytes(33)
        case "empty message 1": inbound = []
        case "garbage message 2": inbound = Sodium.randomBytes(32 + 48 + 99 + 16)
        case "truncated message 2": inbound = Sodium.randomBytes(32 + 20)
        case "oversized message 2": inbound = Sodium.randomBytes(65_536)
        default: inbound = [UInt8](repeating: 0, count: 32 + 48 + 99 + 16)
        }
        let channel = ScriptedHandshakeChannel(inbound: [inbound])
        let error = await #expect(throws: MeshError.self) {
            try await node.handshake(
                role: role == "initiator" ? .initiator : .responder,
                channel: channel,
                context: testContext()
            )
        }
        #expect(codes(error) == ["handshakeFailed", expected])
        #expect(error?.message.contains("in-process") == true, "the message names the remote")
    }

    @Test("a proof with another protocol version or too short is refused")
    func badProofs() async throws {
        let honest = NoiseLinkSecurity(identity: .generate())
        let otherIdentity = NodeIdentity.generate()
        let otherStatic = X25519KeyPair.generate()
        let futureProof = IdentityProof(identity: otherIdentity, noiseStatic: otherStatic.publicKey, version: 2)
        let future = NoiseLinkSecurity(identity: otherIdentity, noiseStatic: otherStatic, proof: futureProof)
        let result = await handshakePair(initiator: honest, responder: future)
        let error = try #require(result.initiator.error as? MeshError)
        #expect(codes(error) == ["handshakeFailed", "malformedIdentityProof"])
        #expect(error.message.contains("version 2, this node version 1: upgrade this node"), "\(error.message)")

        // A Noise-valid message 2 whose payload is too short for a proof.
        var initiator = try LinkHandshake(security: honest, role: .initiator, context: testContext())
        var raw = try HandshakeState(
            protocol: .linkProtocol,
            role: .responder,
            prologue: NoiseLinkSecurity.prologue,
            localStatic: .generate()
        )
        _ = try raw.readMessage(try #require(try initiator.start()))
        let short = try raw.writeMessage(payload: [UInt8](repeating: 1, count: 98))
        let shortError = #expect(throws: MeshError.self) { try initiator.receive(short) }
        #expect(codes(shortError) == ["handshakeFailed", "malformedIdentityProof"])
        #expect((try? initiator.receive(short)) == nil, "a failed handshake refuses more messages")
    }

    @Test("each side learns the other's version and capabilities, unknown bits included")
    func capabilitiesCrossTheHandshake() async throws {
        let (a, b) = StreamHandshakeChannel.pair()
        let alice = NoiseLinkSecurity(identity: .generate())
        let bob = NoiseLinkSecurity(identity: .generate())
        let unknownBit = Capabilities(rawValue: 0x4000)
        async let left = alice.handshake(
            role: .initiator,
            channel: a,
            context: HandshakeContext(transportName: "test", remoteAddress: "b", capabilities: .none)
        )
        async let right = bob.handshake(
            role: .responder,
            channel: b,
            context: HandshakeContext(
                transportName: "test",
                remoteAddress: "a",
                capabilities: [.topics, .receipts, unknownBit]
            )
        )
        let (atAlice, atBob) = try await (left, right)
        #expect(atAlice.remoteCapabilities == [.topics, .receipts, unknownBit])
        #expect(atAlice.remoteCapabilities.names == ["topics", "receipts", "bit_0x4000"])
        #expect(atBob.remoteCapabilities == .none)
        #expect(atAlice.remoteVersion == 1 && atBob.remoteVersion == 1)
    }

    @Test("a peer of an older version is told to upgrade, in one line naming both versions")
    func olderPeerIsToldToUpgrade() async throws {
        let honest = NoiseLinkSecurity(identity: .generate())
        let identity = NodeIdentity.generate()
        let noiseStatic = X25519KeyPair.generate()
        let old = NoiseLinkSecurity(
            identity: identity,
            noiseStatic: noiseStatic,
            proof: IdentityProof(identity: identity, noiseStatic: noiseStatic.publicKey, version: 0)
        )
        let result = await handshakePair(initiator: old, responder: honest)
        let error = try #require(result.responder.error as? MeshError)
        #expect(codes(error) == ["handshakeFailed", "malformedIdentityProof"])
        #expect(
            error.message.contains(
                "speaks SCMesh wire protocol version 0, this node version 1: the peer should upgrade"
            ),
            "\(error.message)"
        )
        #expect(!error.message.contains("\n"))
    }

    @Test("a channel that closes mid-handshake ends it with linkClosed")
    func channelClosed() async throws {
        let node = NoiseLinkSecurity(identity: .generate())
        let channel = ScriptedHandshakeChannel(inbound: [])
        let error = await #expect(throws: MeshError.self) {
            try await node.handshake(role: .initiator, channel: channel, context: testContext())
        }
        #expect(error?.code == .linkClosed)
        #expect(channel.sent.count == 1 && channel.sent[0].count == 32)
    }

    @Test("the configured rekey interval reaches the session cipher")
    func rekeyConfiguration() async throws {
        let alice = NoiseLinkSecurity(identity: .generate(), configuration: .init(rekeyInterval: 5))
        let bob = NoiseLinkSecurity(identity: .generate(), configuration: .init(rekeyInterval: 5))
        let result = await handshakePair(initiator: alice, responder: bob)
        let sender = try #require(try result.initiator.get().cipher as? NoiseSessionCipher)
        let receiver = try result.responder.get().cipher
        #expect(sender.rekeyInterval == 5)
        for index in 0..<23 {
            #expect(try receiver.open(try sender.seal([UInt8(index)])) == [UInt8(index)])
        }
    }
}
