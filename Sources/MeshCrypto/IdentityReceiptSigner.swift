import MeshCore

/// The node's ``ReceiptSigner``: Ed25519 signatures by the node's identity key, checked
/// against the peer ID (which is the signer's Ed25519 public key), and BLAKE2b-256
/// content digests, all through libsodium.
///
/// ```swift
/// let router = Router(security: NoiseLinkSecurity(identity: identity),
///                     receipts: IdentityReceiptSigner(identity: identity), logger: logger)
/// ```
public struct IdentityReceiptSigner: ReceiptSigner {
    /// The node whose key signs.
    public let identity: NodeIdentity

    /// Creates the signer of a node.
    public init(identity: NodeIdentity) {
        self.identity = identity
    }

    /// BLAKE2b with a 32-byte output.
    public func digest(_ bytes: [UInt8]) -> [UInt8] {
        Sodium.blake2b(bytes, outputLength: 32)
    }

    /// A detached Ed25519 signature by ``identity``.
    public func sign(_ bytes: [UInt8]) -> [UInt8] {
        identity.sign(bytes)
    }

    /// Whether `signature` is `peer`'s Ed25519 signature of `bytes`.
    public func verify(_ signature: [UInt8], of bytes: [UInt8], by peer: PeerID) -> Bool {
        NodeIdentity.verify(signature: signature, message: bytes, signer: peer)
    }
}

extension IdentityReceiptSigner {
    /// BLAKE2b-256 piece by piece (the same digest as ``digest(_:)``).
    public func makeDigester() -> (any ContentDigester)? {
        BLAKE2bDigester()
    }
}

/// An incremental BLAKE2b-256 (``Sodium/StreamingHash``): the content digest of a
/// payload hashed while it arrives.
final class BLAKE2bDigester: ContentDigester {
    private var hash: Sodium.StreamingHash? = Sodium.StreamingHash(.blake2b256)

    func update(_ bytes: UnsafeRawBufferPointer) {
        hash?.update(bytes.assumingMemoryBound(to: UInt8.self))
    }

    func finish() -> [UInt8] {
        hash.take()?.finalize() ?? []
    }
}
