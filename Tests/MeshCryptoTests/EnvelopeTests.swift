import MeshCore
import Testing

@testable import MeshCrypto

/// Sealed end-to-end envelopes.
@Suite("Envelopes")
struct EnvelopeTests {
    static let alice = NodeIdentity.generate()
    static let bob = NodeIdentity.generate()
    static let carol = NodeIdentity.generate()

    @Test(
        "round trip: the recipient opens, a relay verifies, the layout is as documented",
        arguments: [0, 1, 1000, 70_000]
    )
    func roundTrip(size: Int) throws {
        let payload = Sodium.randomBytes(size)
        let sealed = try Envelope.seal(payload, to: Self.bob.peerID, from: Self.alice)
        #expect(sealed.count == size + Envelope.overhead)
        #expect(sealed[0] == 1)
        #expect(Array(sealed[1..<33]) == Self.alice.peerID.bytes)
        #expect(Array(sealed[33..<65]) == Self.bob.peerID.bytes)
        let verified = try Envelope.verify(sealed)
        #expect(verified.sender == Self.alice.peerID && verified.recipient == Self.bob.peerID)
        let opened = try Envelope.open(sealed, as: Self.bob)
        #expect(opened.sender == Self.alice.peerID)
        #expect(opened.payload == payload)
        if size >= 16 {
            #expect(sealed.firstRange(of: payload) == nil, "the payload does not appear in clear")
        }
    }

    @Test("two seals of the same payload differ (fresh ephemeral key and nonce)")
    func freshness() throws {
        let first = try Envelope.seal([1, 2, 3], to: Self.bob.peerID, from: Self.alice)
        let second = try Envelope.seal([1, 2, 3], to: Self.bob.peerID, from: Self.alice)
        #expect(first[65...] != second[65...])
    }

    @Test("the documented key derivation and signature rebuild a valid envelope by hand")
    func documentedConstruction() throws {
        let sealed = try Envelope.seal(Array("spec".utf8), to: Self.bob.peerID, from: Self.alice)
        // Recipient side, from the document: X25519(recipient's converted key, ephemeral).
        let recipientX = Self.bob.x25519KeyPair
        let shared = try recipientX.sharedSecret(with: Array(sealed[65..<97]))
        let key = Sodium.blake2b(
            Array("SCMesh-envelope-key-v1".utf8) + shared.bytes + Array(sealed[65..<97]) + recipientX.publicKey,
            outputLength: 32
        )
        let plaintext = Sodium.xchachaPolyDecrypt(
            key: SecretBytes(key),
            nonce: Array(sealed[97..<121]),
            ad: Array(sealed[0..<121]),
            ciphertext: sealed[121..<(sealed.count - 64)]
        )
        #expect(plaintext == Array("spec".utf8))
        let signed =
            Array("SCMesh-envelope-v1".utf8) + Sodium.blake2b(Array(sealed[0..<(sealed.count - 64)]), outputLength: 64)
        #expect(NodeIdentity.verify(signature: Array(sealed.suffix(64)), message: signed, signer: Self.alice.peerID))
    }

    static let regions: [(String, Int)] = [
        ("version", 0), ("sender", 5), ("recipient", 40), ("ephemeral key", 70), ("nonce", 100),
        ("ciphertext", 125), ("tag", 125 + 10 + 5), ("signature", 125 + 10 + 16 + 20),
    ]

    @Test("any tampered byte is refused by verify and open", arguments: regions)
    func tamper(region: String, offset: Int) throws {
        var sealed = try Envelope.seal(Array("0123456789".utf8), to: Self.bob.peerID, from: Self.alice)
        sealed[offset] ^= 0x01
        let expectedVerify: MeshError.Code = region == "version" ? .envelopeMalformed : .badSignature
        let expectedOpen: MeshError.Code = region == "recipient" ? .wrongRecipient : expectedVerify
        let verifyError = #expect(throws: MeshError.self) { try Envelope.verify(sealed) }
        #expect(verifyError?.code == expectedVerify)
        let openError = #expect(throws: MeshError.self) { try Envelope.open(sealed, as: Self.bob) }
        #expect(openError?.code == expectedOpen)
    }

    @Test("an envelope for someone else is refused with wrongRecipient, though it verifies")
    func wrongRecipient() throws {
        let sealed = try Envelope.seal([42], to: Self.bob.peerID, from: Self.alice)
        #expect(try Envelope.verify(sealed).recipient == Self.bob.peerID)
        let error = #expect(throws: MeshError.self) { try Envelope.open(sealed, as: Self.carol) }
        #expect(error?.code == .wrongRecipient)
        #expect(error?.message.contains(Self.bob.peerID.short) == true)
    }

    @Test("a forgery signed by another identity than the named sender is a bad signature")
    func forgedSender() throws {
        var forged = try Envelope.seal([1], to: Self.bob.peerID, from: Self.carol)
        forged.replaceSubrange(1..<33, with: Self.alice.peerID.bytes)
        forged.removeLast(64)
        forged += Self.carol.sign(Envelope.signedMessage(forged[...]))
        let error = #expect(throws: MeshError.self) { try Envelope.open(forged, as: Self.bob) }
        #expect(error?.code == .badSignature)
    }

    @Test("a correctly signed envelope that does not decrypt is decryptFailed")
    func signedGarbage() throws {
        var sealed = try Envelope.seal([1, 2, 3], to: Self.bob.peerID, from: Self.alice)
        sealed[122] ^= 0xFF
        sealed.removeLast(64)
        sealed += Self.alice.sign(Envelope.signedMessage(sealed[...]))
        #expect(try Envelope.verify(sealed).sender == Self.alice.peerID)
        let error = #expect(throws: MeshError.self) { try Envelope.open(sealed, as: Self.bob) }
        #expect(error?.code == .decryptFailed)
    }

    @Test("truncated envelopes are refused", arguments: [0, 1, 100, Envelope.overhead - 1])
    func truncated(length: Int) throws {
        let sealed = try Envelope.seal([], to: Self.bob.peerID, from: Self.alice)
        let error = #expect(throws: MeshError.self) { try Envelope.verify(Array(sealed.prefix(length))) }
        #expect(error?.code == .envelopeTruncated)
        #expect(throws: MeshError.self) { try Envelope.open(Array(sealed.prefix(length)), as: Self.bob) }
    }

    @Test("sealing to a peer ID that is not an Ed25519 key is refused")
    func invalidRecipient() throws {
        for bytes in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            let error = #expect(throws: MeshError.self) {
                try Envelope.seal([1], to: try PeerID(bytes: bytes), from: Self.alice)
            }
            #expect(error?.code == .invalidArgument)
        }
    }
}
