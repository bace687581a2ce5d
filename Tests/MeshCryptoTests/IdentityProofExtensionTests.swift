import MeshCore
import Testing

@testable import MeshCrypto

/// The identity proof's extension area (docs/PROTOCOL.md §B.2.1): the name a node
/// claims, and what a receiver does with entries it cannot use.
@Suite("Identity proof extensions")
struct IdentityProofExtensionTests {
    @Test("a proof round-trips with and without a name; the name leaves the first 99 bytes unchanged")
    func roundTrip() throws {
        let identity = NodeIdentity.generate()
        let noiseStatic = X25519KeyPair.generate().publicKey
        let plain = IdentityProof(identity: identity, noiseStatic: noiseStatic, capabilities: 0x01FF)
        #expect(plain.encoded.count == IdentityProof.length)
        #expect(try IdentityProof.parse(plain.encoded) == plain)

        var named = plain
        named.name = "Alice's laptop ✓"
        let bytes = named.encoded
        let nameBytes = Array("Alice's laptop ✓".utf8)
        #expect(bytes.count == IdentityProof.length + 3 + nameBytes.count)
        // What a receiver of the current release reads (bytes 0..<99) is the same proof.
        #expect(Array(bytes.prefix(IdentityProof.length)) == plain.encoded)
        #expect(Array(bytes[99..<102]) == [1, 0, UInt8(nameBytes.count)])
        let parsed = try IdentityProof.parse(bytes)
        #expect(parsed == named)
        #expect(try parsed.verify(noiseStatic: noiseStatic) == identity.peerID)
    }

    @Test("a proof of the current release (exactly 99 bytes) still parses: no name")
    func currentReleaseProof() throws {
        let identity = NodeIdentity.generate()
        let noiseStatic = X25519KeyPair.generate().publicKey
        // The layout written out by hand, as a node of the current release sends it.
        let signature = identity.sign(Array("SCMesh-noise-static-v1".utf8) + noiseStatic)
        let bytes = identity.publicKey + signature + [1, 0x00, 0x10]
        let proof = try IdentityProof.parse(bytes)
        #expect(proof.name == nil)
        #expect(proof.capabilities == 0x0010)
        #expect(try proof.verify(noiseStatic: noiseStatic) == identity.peerID)
    }

    /// Extension areas a receiver must survive, and the name it then takes.
    static let areas: [(String, [UInt8], String?)] = [
        ("a name", entry(1, Array("bob".utf8)), "bob"),
        ("an unknown type before the name", entry(0x7F, [1, 2, 3]) + entry(1, Array("bob".utf8)), "bob"),
        ("an empty unknown entry before the name", entry(9, []) + entry(1, Array("bob".utf8)), "bob"),
        ("two names: the first counts", entry(1, Array("bob".utf8)) + entry(1, Array("eve".utf8)), "bob"),
        (
            "a name of 64 bytes", entry(1, Array(String(repeating: "é", count: 32).utf8)),
            String(repeating: "é", count: 32)
        ),
        ("a name of 65 bytes", entry(1, Array(String(repeating: "a", count: 65).utf8)), nil),
        ("an empty name", entry(1, []), nil),
        ("a name of white space only", entry(1, Array("   ".utf8)), nil),
        ("a name that is not UTF-8", entry(1, [0x62, 0xFF, 0x62]), nil),
        ("a name with an escape sequence", entry(1, Array("\u{1B}[2Jbob".utf8)), nil),
        ("a name with a newline", entry(1, Array("bob\nroot".utf8)), nil),
        ("a name with a direction override", entry(1, Array("bob\u{202E}txt".utf8)), nil),
        ("an entry longer than the area", [1, 0, 200] + Array("bob".utf8), nil),
        ("a truncated header", [1, 0], nil),
        ("one stray byte", [0xAB], nil),
        ("a huge unknown entry", entry(0xEE, [UInt8](repeating: 0x55, count: 60_000)), nil),
        ("a garbled tail after a name", entry(1, Array("bob".utf8)) + [7, 0xFF, 0xFF, 1], "bob"),
    ]

    static func entry(_ type: UInt8, _ value: [UInt8]) -> [UInt8] {
        IdentityProof.extensionEntry(type: type, value: value)
    }

    @Test(
        "a full handshake completes whatever the extension area holds; only a valid name is taken",
        arguments: areas.indices
    )
    func extensionAreaNeverFailsTheHandshake(index: Int) async throws {
        let (_, area, expected) = Self.areas[index]
        // An initiator of this release against a responder whose message 2 carries a
        // genuine proof followed by `area`.
        let honest = NoiseLinkSecurity(identity: .generate())
        var initiator = try LinkHandshake(security: honest, role: .initiator, context: testContext())
        let identity = NodeIdentity.generate()
        let responderStatic = X25519KeyPair.generate()
        var responder = try HandshakeState(
            protocol: .linkProtocol,
            role: .responder,
            prologue: NoiseLinkSecurity.prologue,
            localStatic: responderStatic
        )
        _ = try responder.readMessage(try #require(try initiator.start()))
        let proof = IdentityProof(identity: identity, noiseStatic: responderStatic.publicKey).encoded
        let message2 = try responder.writeMessage(payload: proof + area)
        let message3 = try #require(try initiator.receive(message2))
        let session = try #require(initiator.session)
        #expect(session.remotePeerID == identity.peerID)
        #expect(session.remoteName == expected)
        // The initiator's own proof reached the responder intact.
        let payload = try responder.readMessage(message3)
        #expect(
            try IdentityProof.parse(payload).verify(noiseStatic: try #require(responder.remoteStatic))
                == honest.localPeerID
        )
    }

    @Test("each side learns the name the other claims; a side that claims none is heard as none")
    func namesCrossTheHandshake() async throws {
        let (a, b) = StreamHandshakeChannel.pair()
        let alice = NoiseLinkSecurity(identity: .generate())
        let bob = NoiseLinkSecurity(identity: .generate())
        async let left = alice.handshake(
            role: .initiator,
            channel: a,
            context: HandshakeContext(transportName: "test", remoteAddress: "b", localName: "alice")
        )
        async let right = bob.handshake(
            role: .responder,
            channel: b,
            context: HandshakeContext(transportName: "test", remoteAddress: "a")
        )
        let (atAlice, atBob) = try await (left, right)
        #expect(atBob.remoteName == "alice")
        #expect(atAlice.remoteName == nil)
        #expect(a.sent.messages.count == 2 && a.sent.messages[1].count == 48 + IdentityProof.length + 3 + 5 + 16)
    }

    @Test("a configured name is cut to 64 bytes at a character boundary; one with a control character is not sent")
    func announceable() {
        #expect(PeerNames.announceable(String(repeating: "ü", count: 40)) == String(repeating: "ü", count: 32))
        #expect(PeerNames.announceable("kitchen\u{07}") == nil)
        #expect(PeerNames.announceable("") == nil)
        #expect(PeerNames.announceable(nil) == nil)
        #expect(PeerNames.announceable("Alice's laptop") == "Alice's laptop")
    }
}
