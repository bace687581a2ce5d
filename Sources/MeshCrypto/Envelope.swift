import MeshCore

/// A message sealed end to end to one peer: only the recipient can read the payload,
/// and anyone (a relay) can check who sent it and that nobody changed it.
///
/// The sender makes an ephemeral X25519 key, agrees a secret with the recipient's
/// X25519 key (converted from the recipient's Ed25519 peer ID), derives a key with
/// BLAKE2b, encrypts the payload with XChaCha20-Poly1305 and signs header +
/// ciphertext with its Ed25519 identity. Format 2 also binds the DATA frame's message
/// ID, its end-to-end flags and the creation time (``SealBinding``), so a relay can
/// neither deliver it again under a fresh ID nor mark it an emergency. Byte layout
/// (`docs/PROTOCOL.md` §B.3):
///
/// ```
/// offset  size  field
///      0     1  format (1 or 2)
///      1    32  sender peer ID (Ed25519 public key)
///     33    32  recipient peer ID (Ed25519 public key)
///     65    32  ephemeral X25519 public key
///     97    24  XChaCha20 nonce (random)
///               format 2 only:
///    121    16    message ID of the DATA frame
///    137     2    bound DATA flags (receipt 0x0002, emergency 0x0008)
///    139     8    creation time (u64, milliseconds since 1970, UTC)
///      h   n+16 ciphertext of the n-byte payload, with its Poly1305 tag
///              (h = 121 in format 1, 147 in format 2)
///  h+16+n   64  Ed25519 signature by the sender over
///               "SCMesh-envelope-v<format>" || BLAKE2b-512(bytes 0..<h+16+n)
/// ```
///
/// ```swift
/// let sealed = try Envelope.seal(Array("hi".utf8), to: bob.peerID, from: alice)
/// let (sender, payload) = try Envelope.open(sealed, as: bob)
/// ```
public enum Envelope {
    /// The format without a binding (format 1).
    public static let version: UInt8 = 1
    /// The format that binds the frame's message ID, flags and a creation time.
    public static let boundVersion: UInt8 = 2
    /// The header length of format 1 (version, sender, recipient, ephemeral key, nonce).
    public static let headerLength = 1 + 32 + 32 + 32 + 24
    /// The header length of format 2 (format 1's, then message ID, flags, creation time).
    public static let boundHeaderLength = headerLength + 16 + 2 + 8
    /// The bytes a format-1 envelope adds to its payload: header, tag, signature (201).
    public static let overhead = headerLength + Sodium.aeadTagLength + 64
    /// The bytes a format-2 envelope adds to its payload (227).
    public static let boundOverhead = boundHeaderLength + Sodium.aeadTagLength + 64
    /// The domain-separation prefix of the sender's signature, per format.
    static func signatureContext(_ format: UInt8) -> [UInt8] { Array("SCMesh-envelope-v\(format)".utf8) }
    /// The domain-separation prefix of the key derivation.
    static let keyContext: [UInt8] = Array("SCMesh-envelope-key-v1".utf8)

    /// Seals `payload` so that only `recipient` can read it, signed by `sender`: in
    /// format 2, bound to `binding` and `createdMillis`, with no binding in format 1.
    /// - Parameters:
    ///   - binding: the DATA frame's message ID and flags; nil for format 1.
    ///   - createdMillis: the creation time (milliseconds since 1970, UTC) format 2
    ///     signs.
    /// - Throws: ``MeshCore/MeshError`` `.invalidArgument` when `recipient` is not a
    ///   valid Ed25519 public key (so no envelope can be sealed to it).
    public static func seal(
        _ payload: [UInt8],
        to recipient: PeerID,
        from sender: NodeIdentity,
        binding: SealBinding? = nil,
        createdMillis: UInt64 = 0
    ) throws -> [UInt8] {
        guard let recipientX25519 = Sodium.ed25519PublicKeyToX25519(recipient.bytes) else {
            throw MeshError(
                .invalidArgument,
                "peer ID \(recipient.short) is not a valid Ed25519 public key, so nothing can be sealed to it; check where the ID came from"
            )
        }
        let ephemeral = X25519KeyPair.generate()
        let shared = try ephemeral.sharedSecret(with: recipientX25519)
        let key = deriveKey(shared: shared, ephemeral: ephemeral.publicKey, recipientX25519: recipientX25519)
        let nonce = Sodium.randomBytes(24)
        let format = binding == nil ? version : boundVersion
        var envelope = [format] + sender.publicKey + recipient.bytes + ephemeral.publicKey + nonce
        envelope.reserveCapacity(payload.count + boundOverhead)
        if let binding {
            var writer = ByteWriter(capacity: 26)
            writer.write(binding.messageID.high)
            writer.write(binding.messageID.low)
            writer.write(binding.flags)
            writer.write(createdMillis)
            envelope += writer.bytes
        }
        envelope += Sodium.xchachaPolyEncrypt(key: key, nonce: nonce, ad: envelope, plaintext: payload)
        envelope += sender.sign(signedMessage(envelope[...], format: format))
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
    public static func open(_ envelope: [UInt8], as identity: NodeIdentity) throws -> (sender: PeerID, payload: [UInt8])
    {
        let parsed = try Parsed(envelope)
        guard parsed.recipient == identity.peerID else {
            throw MeshError(
                .wrongRecipient,
                "envelope from \(parsed.sender.short) is addressed to \(parsed.recipient.short), not to this node (\(identity.peerID.short)); relay it instead of opening it"
            )
        }
        try parsed.checkSignature()
        let ownKey = identity.x25519KeyPair
        let undecryptable = MeshError(
            .decryptFailed,
            "envelope from \(parsed.sender.short) is correctly signed but does not decrypt for this node: the sender sealed it to a different key or corrupted it before signing"
        )
        guard let shared = try? ownKey.sharedSecret(with: parsed.ephemeral) else { throw undecryptable }
        let key = deriveKey(shared: shared, ephemeral: parsed.ephemeral, recipientX25519: ownKey.publicKey)
        guard
            let payload = Sodium.xchachaPolyDecrypt(
                key: key,
                nonce: parsed.nonce,
                ad: Array(envelope[0..<parsed.headerLength]),
                ciphertext: parsed.ciphertext
            )
        else {
            throw undecryptable
        }
        return (parsed.sender, payload)
    }

    /// What the sender signs: the context string and the BLAKE2b-512 digest of header
    /// + ciphertext (one fast pass over a large payload instead of Ed25519's two
    /// SHA-512 passes; BLAKE2b is collision resistant, so the signature still covers
    /// every byte).
    static func signedMessage(_ headerAndCiphertext: ArraySlice<UInt8>, format: UInt8 = version) -> [UInt8] {
        signatureContext(format) + Sodium.blake2b(headerAndCiphertext, outputLength: 64)
    }

    /// What a format-2 envelope binds, read without any cryptography; nil for format 1.
    /// Use it only after ``verify(_:)`` or ``open(_:as:)`` accepted the envelope.
    /// - Throws: as ``verify(_:)`` does before it checks the signature.
    public static func binding(of envelope: [UInt8]) throws -> (binding: SealBinding, createdMillis: UInt64)? {
        let parsed = try Parsed(envelope)
        guard let binding = parsed.binding else { return nil }
        return (binding, parsed.createdMillis)
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
        let format: UInt8
        let headerLength: Int
        /// Format 2's bound message ID and flags; nil in format 1.
        let binding: SealBinding?
        let createdMillis: UInt64

        init(_ bytes: [UInt8]) throws {
            guard let format = bytes.first, format == Envelope.version || format == Envelope.boundVersion else {
                guard bytes.count >= Envelope.overhead else {
                    throw MeshError(
                        .envelopeTruncated,
                        "an envelope has at least \(Envelope.overhead) bytes; this one has \(bytes.count): it was cut short in transit"
                    )
                }
                throw MeshError(
                    .envelopeMalformed,
                    "envelope format \(bytes[0]) is unknown (this node reads formats \(Envelope.version) and \(Envelope.boundVersion)); the sender runs a different protocol version"
                )
            }
            let minimum = format == Envelope.version ? Envelope.overhead : Envelope.boundOverhead
            guard bytes.count >= minimum else {
                throw MeshError(
                    .envelopeTruncated,
                    "a format-\(format) envelope has at least \(minimum) bytes; this one has \(bytes.count): it was cut short in transit"
                )
            }
            self.bytes = bytes
            self.format = format
            headerLength = format == Envelope.version ? Envelope.headerLength : Envelope.boundHeaderLength
            sender = try PeerID(bytes: bytes[1..<33])
            recipient = try PeerID(bytes: bytes[33..<65])
            ephemeral = Array(bytes[65..<97])
            nonce = Array(bytes[97..<Envelope.headerLength])
            if format == Envelope.boundVersion {
                func integer(_ offset: Int, _ size: Int) -> UInt64 {
                    bytes[offset..<(offset + size)].reduce(0) { $0 << 8 | UInt64($1) }
                }
                let base = Envelope.headerLength
                let (high, low) = (integer(base, 8), integer(base + 8, 8))
                let flags = UInt16(integer(base + 16, 2))
                guard flags & ~SealBinding.boundFlags == 0 else {
                    throw MeshError(
                        .envelopeMalformed,
                        "envelope binds flags 0x\(String(flags, radix: 16)), of which only 0x\(String(SealBinding.boundFlags, radix: 16)) may be bound; it was not made by an SCMesh sender"
                    )
                }
                binding = SealBinding(messageID: MessageID(high: high, low: low), flags: flags)
                createdMillis = integer(base + 18, 8)
            } else {
                binding = nil
                createdMillis = 0
            }
            ciphertext = bytes[headerLength..<(bytes.count - 64)]
            signature = bytes[(bytes.count - 64)...]
        }

        func checkSignature() throws {
            let signed = Envelope.signedMessage(bytes[0..<(bytes.count - 64)], format: format)
            guard Sodium.ed25519Verify(signature: signature, message: signed, publicKey: sender.bytes) else {
                throw MeshError(
                    .badSignature,
                    "envelope claiming to come from \(sender.short) does not carry that peer's valid signature: it was tampered with in transit or forged; drop it"
                )
            }
        }
    }
}
