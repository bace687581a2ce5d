/// Signs the delivery receipts this node returns and checks the ones it gets back.
///
/// A node with a signer answers every message it takes custody of with a
/// ``DeliveryReceipt`` signed by its identity key, and turns its own messages
/// ``MessageStatus/delivered`` only when such a receipt arrives (the next hop's
/// acknowledgement makes them ``MessageStatus/sent``). Without a signer (core tests,
/// simulations) the destination's hop acknowledgement is the delivery.
///
/// MeshCrypto's `IdentityReceiptSigner` (Ed25519 + BLAKE2b-256 over libsodium) is the
/// implementation a node uses; `docs/PROTOCOL.md` specifies the bytes.
public protocol ReceiptSigner: Sendable {
    /// A 32-byte digest of `bytes` (the content hash a receipt carries).
    func digest(_ bytes: [UInt8]) -> [UInt8]
    /// A digester computing ``digest(_:)`` piece by piece (for payloads hashed while
    /// they arrive); nil when the signer has none (the default).
    func makeDigester() -> (any ContentDigester)?
    /// A 64-byte signature over `bytes` by this node.
    func sign(_ bytes: [UInt8]) -> [UInt8]
    /// Whether `signature` over `bytes` was made by `peer`.
    func verify(_ signature: [UInt8], of bytes: [UInt8], by peer: PeerID) -> Bool
}
