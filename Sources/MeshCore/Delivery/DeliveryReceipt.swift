/// The end-to-end proof that a message reached its destination: the destination's
/// signature over the message ID, a digest of the bytes it received and the ID of the
/// node that sent it. It travels back as the payload of a DATA message with
/// `DataFrame.receiptFlag` set, from the destination to the message's origin.
///
/// Wire form (113 bytes): version `1` (u8), message ID (16), content digest (32),
/// Ed25519 signature (64). The signature covers ``signedBytes(sender:)``:
/// `"SCMesh receipt v1"` (17 ASCII bytes), the message ID, the content digest and the
/// sender's peer ID (32). See `docs/PROTOCOL.md`, section "Delivery receipts".
public struct DeliveryReceipt: Sendable, Hashable {
    /// The receipt format version this build writes and reads.
    public static let version: UInt8 = 1
    /// Encoded length in bytes.
    public static let encodedLength = 1 + MessageID.byteCount + 32 + 64
    /// Domain separation for the signed bytes.
    static let domain = Array("SCMesh receipt v1".utf8)

    /// The message this receipt is for.
    public var messageID: MessageID
    /// The digest of the message's bytes as they travelled (sealed, when sealed).
    public var contentDigest: [UInt8]
    /// The destination's signature over ``signedBytes(sender:)``.
    public var signature: [UInt8]

    /// Creates a receipt from its parts.
    public init(messageID: MessageID, contentDigest: [UInt8], signature: [UInt8]) {
        self.messageID = messageID
        self.contentDigest = contentDigest
        self.signature = signature
    }

    /// Makes and signs the receipt for a message `sender` sent to the signer's node.
    public static func sign(
        messageID: MessageID,
        content: [UInt8],
        sender: PeerID,
        signer: any ReceiptSigner
    ) -> DeliveryReceipt {
        let digest = signer.digest(content)
        let signed = signedBytes(messageID: messageID, digest: digest, sender: sender)
        return DeliveryReceipt(messageID: messageID, contentDigest: digest, signature: signer.sign(signed))
    }

    /// The bytes the signature covers.
    public func signedBytes(sender: PeerID) -> [UInt8] {
        Self.signedBytes(messageID: messageID, digest: contentDigest, sender: sender)
    }

    static func signedBytes(messageID: MessageID, digest: [UInt8], sender: PeerID) -> [UInt8] {
        var writer = ByteWriter(capacity: domain.count + MessageID.byteCount + 64)
        writer.write(contentsOf: domain)
        writer.write(contentsOf: messageID.bytes)
        writer.write(contentsOf: digest)
        writer.write(contentsOf: sender.bytes)
        return writer.bytes
    }

    /// The receipt's wire form.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.encodedLength)
        writer.write(Self.version)
        writer.write(contentsOf: messageID.bytes)
        writer.write(contentsOf: contentDigest)
        writer.write(contentsOf: signature)
        return writer.bytes
    }

    /// Decodes a receipt's wire form.
    /// - Throws: ``MeshError`` `.malformedFrame` when the length or version is wrong.
    public init(decoding bytes: [UInt8]) throws(MeshError) {
        guard bytes.count == Self.encodedLength else {
            throw MeshError(
                .malformedFrame,
                "receipt of \(bytes.count) bytes; a version-1 receipt has \(Self.encodedLength)"
            )
        }
        var reader = ByteReader(bytes, context: "receipt")
        let version = try reader.readInteger(UInt8.self, field: "version")
        guard version == Self.version else {
            throw MeshError(
                .malformedFrame,
                "receipt version \(version) is not supported (this build reads \(Self.version))"
            )
        }
        let high = try reader.readInteger(UInt64.self, field: "message ID")
        let low = try reader.readInteger(UInt64.self, field: "message ID")
        messageID = MessageID(high: high, low: low)
        contentDigest = Array(try reader.readBytes(32, field: "content digest"))
        signature = Array(try reader.readBytes(64, field: "signature"))
    }

    /// The ID of the receipt message that answers message `id` from `origin`: derived,
    /// so a receipt issued twice (after a restart) is the same message and is
    /// deduplicated. The origin is part of it because message IDs are unique per origin
    /// only (duplicates are keyed on both): a node that used another origin's ID first
    /// must not take the receipt ID of the genuine message.
    public static func receiptMessageID(for id: MessageID, from origin: PeerID, signer: any ReceiptSigner) -> MessageID
    {
        let digest = signer.digest(Array("SCMesh receipt id".utf8) + id.bytes + origin.bytes)
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in digest.prefix(16).enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        return MessageID(high: high, low: low)
    }
}
