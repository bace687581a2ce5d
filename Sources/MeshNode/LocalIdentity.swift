import Foundation
import MeshCore
import MeshCrypto

/// The node's identity as the node uses it: its peer ID, the link security that
/// proves it (Noise XX), the sealer that seals its messages end to end, and the
/// signer of its delivery receipts.
///
/// ``loadOrCreate(dataDirectory:)`` keeps MeshCrypto's Ed25519 identity in
/// `<data-dir>/identity.key` (mode 0600); the peer ID is the Ed25519 public key.
public struct LocalIdentity: Sendable {
    /// The node's peer ID.
    public var peerID: PeerID
    /// The handshake every link runs.
    public var security: any LinkSecurity
    /// Seals messages end to end to their recipient (nil: payloads travel as they are).
    public var sealer: (any MessageSealer)?
    /// Signs the delivery receipts the node returns and checks the ones it gets (nil:
    /// no receipts; the destination's hop acknowledgement counts as delivery).
    public var receipts: (any ReceiptSigner)?
    /// The Ed25519 public key, in hex (64 characters), when the identity has one.
    public var publicKeyHex: String?
    /// The Ed25519 identity itself, when the node has one: it signs invitations
    /// (`scmesh invite`).
    public var signingIdentity: NodeIdentity?

    /// Creates an identity from its parts.
    public init(
        peerID: PeerID,
        security: any LinkSecurity,
        sealer: (any MessageSealer)? = nil,
        receipts: (any ReceiptSigner)? = nil,
        publicKeyHex: String? = nil,
        signingIdentity: NodeIdentity? = nil
    ) {
        self.signingIdentity = signingIdentity
        self.peerID = peerID
        self.security = security
        self.sealer = sealer
        self.receipts = receipts
        self.publicKeyHex = publicKeyHex
    }

    /// The identity file's name inside the data directory.
    public static let identityFileName = "identity.key"

    /// Loads or creates the Ed25519 identity in `dataDirectory/identity.key`,
    /// authenticates and encrypts every link with Noise XX, and seals every message
    /// end to end in an envelope to its recipient (MeshCrypto).
    /// - Throws: MeshCrypto's `MeshError`s (`identityFileInsecure`, `identityFileCorrupt`,
    ///   `identityFileIO`), whose messages say how to fix the file.
    public static func loadOrCreate(dataDirectory: String) throws -> LocalIdentity {
        try DataDirectory.prepare(dataDirectory)
        let identity = try NodeIdentity.loadOrCreate(directory: dataDirectory)
        return LocalIdentity(
            peerID: identity.peerID,
            security: NoiseLinkSecurity(identity: identity),
            sealer: EnvelopeSealer(identity: identity),
            receipts: IdentityReceiptSigner(identity: identity),
            publicKeyHex: identity.publicKeyHex,
            signingIdentity: identity
        )
    }
}
