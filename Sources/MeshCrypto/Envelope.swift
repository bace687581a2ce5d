import MeshCore

/// A message sealed end to end to one peer: only the recipient can read the payload,
/// and anyone (a relay) can check who sent it and that nobody changed it.
///
/// The sender makes an ephemeral X25519 key, agrees a secret with the recipient's
/// X25519 key (converted from the recipient's Ed25519 peer ID), derives a key with
/// BLAKE2b, encrypts the payload with XChaCha20-Poly1305 and signs header +
/// ciphertext with its Ed25519 identity. Byte layout (`docs/PROTOCOL.md, part B`):
///
/// ```
/// offset  size  field
///      0     1  version (1)
///      1    32  sender peer ID (Ed25519 public key)
///     33    32  recipient peer ID (Ed25519 public key)
///     65    32  ephemeral X25519 public key
///     97    24  XChaCha20 nonce (random)
///    121   n+16 ciphertext of the n-byte payload, with its Poly1305 tag
///  137+n    64  Ed25519 signature by the sender over
///               "SCMesh-envelope-v1" || BLAKE2b-512(bytes 0..<137+n)
/// ```
///
/// ```swift
/// let sealed = try Envelope.seal(Array("hi".utf8), to: bob.peerID, from: alice)
/// let (sender, payload) = try Envelope.open(sealed, as: bob)
/// ```
public enum Envelope {
    /// The layout version this code writes and reads.
    public static let version: UInt8 = 1
    /// The header length (version, sender, recipient, ephemeral key, nonce).
    public static let headerLength = 1 + 32 + 32 + 32 + 24
    /// The bytes an envelope adds to its payload: header, tag, signature (201).
    public static let overhead = headerLength + Sodium.aeadTagLength + 64
    /// The domain-separation prefix of the sender's signature.
    static let signatureContext: [UInt8] = Array("SCMesh-envelope-v1".utf8)
    /// The domain-separation prefix of the key derivation.
    static let keyContext: [UInt8] = Array("SCMesh-envelope-key-v1".utf8)

    /// Seals `payload` so that only `recipient` can read it, signed by `sender`.
    /// - Throws: ``MeshCore/MeshError`` `.invalidArgument` when `recipient` is not a
    ///   valid Ed25519 public key (so no envelope can be sealed to it).
    public static func seal(_ payload: [UInt8], to recipient: PeerID, from sender: NodeIdentity) throws -> [UInt8] {
        guard let recipientX25519 = Sodium.ed25519PublicKeyToX25519(recipient.bytes) else {
            throw MeshError(.invalidArgument, "peer ID \(recipient.short) is not a valid Ed25519 public key, so nothing can be sealed to it; check where the ID came from")
        }
        let ephemeral = X25519KeyPair.generate()
        let shared = try ephemeral.sharedSecret(with: recipientX25519)
        let key = deriveKey(shared: shared, ephemeral: ephemeral.publicKey, recipientX25519: recipientX25519)
        let nonce = Sodium.randomBytes(24)
        var envelope = [version] + sender.publicKey + recipient.bytes + ephemeral.publicKey + nonce
        envelope.reserveCapacity(payload.count + overhead)
        envelope += Sodium.xchachaPolyEncrypt(key: key, nonce: nonce, ad: envelope, plaintext: payload)
        envelope += sender.sign(signedMessage(envelope[...]))
        return envelope
    }

    /// Checks an envelope's origin signature without decrypting it (what a relay does).
    /// - Returns: the sender and the recipient the envelope names.
    /// - Throws: ``MeshCore/MeshError`` `.envelopeTruncated`, `.envelopeMalformed`
    ///   (unknown version), `.badSignature` (tampered in transit or forged).
    public static func verify(_ envelope: [UInt8]) throws -> (sender: PeerID, recipient: PeerID) {
        let parsed = try Parsed(envelope)
        try parsed.checkSignature()
        return (parsed.sender, parsed.recipient)
    }

    /// Verifies and decrypts an envelope addressed to `identity`.
    /// - Returns: the proven sender and the payload.
    /// - Throws: ``MeshCore/MeshError`` `.envelopeTruncated`, `.envelopeMalformed`,
    ///   `.wrongRecipient` (addressed to another peer), `.badSignature` (tampered in
    ///   transit or forged), `.decryptFailed` (correctly signed, but the ciphertext does
    ///   not decrypt for this identity: the sender sealed it wrongly).
    public static func open(_ envelope: [UInt8], as identity: NodeIdentity) throws -> (sender: PeerID, payload: [UInt8]) {
        let parsed = try Parsed(envelope)
        guard parsed.recipient == identity.peerID else {
            throw MeshError(.wrongRecipient, "envelope from \(parsed.sender.short) is addressed to \(parsed.recipient.short), not to this node (\(identity.peerID.short)); relay it instead of opening it")
        }
        try parsed.checkSignature()
        let ownKey = identity.x25519KeyPair
        let undecryptable = MeshError(.decryptFailed, "envelope from \(parsed.sender.short) is correctly signed but does not decrypt for this node: the sender sealed it to a different key or corrupted it before signing")
        guard let shared = try? ownKey.sharedSecret(with: parsed.ephemeral) else { throw undecryptable }
        let key = deriveKey(shared: shared, ephemeral: parsed.ephemeral, recipientX25519: ownKey.publicKey)
        guard let payload = Sodium.xchachaPolyDecrypt(key: key, nonce: parsed.nonce, ad: Array(envelope[0..<headerLength]), ciphertext: parsed.ciphertext) else {
            throw undecryptable
        }
        return (parsed.sender, payload)
    }

    /// What the sender signs: the context string and the BLAKE2b-512 digest of header
    /// + ciphertext (one fast pass over a large payload instead of Ed25519's two
    /// SHA-512 passes; BLAKE2b is collision resistant, so the signature still covers
    /// every byte).
    static func signedMessage(_ headerAndCiphertext: ArraySlice<UInt8>) -> [UInt8] {
        signatureContext + Sodium.blake2b(headerAndCiphertext, outputLength: 64)
    }

    /// key = BLAKE2b-256("SCMesh-envelope-key-v1" || X25519 shared secret ||
    /// ephemeral public key || recipient's X25519 public key).
    static func deriveKey(shared: SecretBytes, ephemeral: [UInt8], recipientX25519: [UInt8]) -> SecretBytes {
        var input = keyContext + shared.bytes + ephemeral + recipientX25519
        var digest = Sodium.blake2b(input, outputLength: 32)
        defer {
            Sodium.wipe(&input)
            Sodium.wipe(&digest)
        }
        return SecretBytes(digest)
    }

    /// The fields of an envelope, parsed without any cryptography (never traps).
    struct Parsed {
        let bytes: [UInt8]
        let sender: PeerID
        let recipient: PeerID
        let ephemeral: [UInt8]
        let nonce: [UInt8]
        let ciphertext: ArraySlice<UInt8>
        let signature: ArraySlice<UInt8>

        init(_ bytes: [UInt8]) throws {
            guard bytes.count >= Envelope.overhead else {
                throw MeshError(.envelopeTruncated, "an envelope has at least \(Envelope.overhead) bytes; this one has \(bytes.count): it was cut short in transit")
            }
            guard bytes[0] == Envelope.version else {
                throw MeshError(.envelopeMalformed, "envelope version \(bytes[0]) is unknown (this node reads version \(Envelope.version)); the sender runs a different protocol version")
            }
            self.bytes = bytes
            sender = try PeerID(bytes: bytes[1..<33])
            recipient = try PeerID(bytes: bytes[33..<65])
            ephemeral = Array(bytes[65..<97])
            nonce = Array(bytes[97..<Envelope.headerLength])
            ciphertext = bytes[Envelope.headerLength..<(bytes.count - 64)]
            signature = bytes[(bytes.count - 64)...]
        }

        func checkSignature() throws {
            let signed = Envelope.signedMessage(bytes[0..<(bytes.count - 64)])
            guard Sodium.ed25519Verify(signature: signature, message: signed, publicKey: sender.bytes) else {
                throw MeshError(.badSignature, "envelope claiming to come from \(sender.short) does not carry that peer's valid signature: it was tampered with in transit or forged; drop it")
            }
        }
    }
}
