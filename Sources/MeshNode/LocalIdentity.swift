import Foundation
import MeshCore
import MeshCrypto

/// The node's identity as the node uses it: its peer ID and the link security that
/// proves it.
///
/// Two kinds exist while the node moves to real cryptography:
/// - ``loadOrCreate(dataDirectory:)`` — the placeholder ``buildNode(config:dataDirectory:logger:registry:identity:)``
///   uses by default: 32 random bytes kept in `<data-dir>/peer-id` (64 hex
///   characters), links in clear with ``PlaintextLinkSecurity``.
/// - ``loadOrCreateCrypto(dataDirectory:)`` — MeshCrypto's Ed25519 identity in
///   `<data-dir>/identity.key` (the peer ID is the public key), Noise XX links and
///   end-to-end sealed messages.
public struct LocalIdentity: Sendable {
    /// The node's peer ID.
    public var peerID: PeerID
    /// The handshake every link runs.
    public var security: any LinkSecurity
    /// Seals messages end to end to their recipient (nil: payloads travel as they are).
    public var sealer: (any MessageSealer)?

    /// Creates an identity from its parts.
    public init(peerID: PeerID, security: any LinkSecurity, sealer: (any MessageSealer)? = nil) {
        self.peerID = peerID
        self.security = security
        self.sealer = sealer
    }

    /// The file name of the persisted peer ID inside the data directory.
    public static let peerIDFileName = "peer-id"

    /// Loads the identity kept in `dataDirectory`, creating and saving a new one when
    /// there is none. Creates the directory (mode 0700) if needed.
    /// - Throws: ``MeshError`` `.invalidConfiguration` when the directory cannot be
    ///   created or the file is unreadable or corrupt.
    public static func loadOrCreate(dataDirectory: String) throws -> LocalIdentity {
        try DataDirectory.prepare(dataDirectory)
        let path = (dataDirectory as NSString).appendingPathComponent(peerIDFileName)
        if let existing = try readPeerID(at: path) {
            return LocalIdentity(peerID: existing, security: PlaintextLinkSecurity(localPeerID: existing))
        }
        var peerID = PeerID.random()
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        guard FileManager.default.createFile(
            atPath: temporary, contents: Data((peerID.hex + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw MeshError(.invalidConfiguration, "cannot write \(temporary); check the data directory's permissions")
        }
        defer { unlink(temporary) }
        // link(2) publishes the complete file only if none exists yet, so processes
        // creating the identity at the same moment all end up with the same one.
        if link(temporary, path) != 0 {
            let code = errno
            guard code == EEXIST, let winner = try readPeerID(at: path) else {
                throw MeshError(.invalidConfiguration, "cannot create \(path): \(String(cString: strerror(code)))")
            }
            peerID = winner
        }
        return LocalIdentity(peerID: peerID, security: PlaintextLinkSecurity(localPeerID: peerID))
    }

    /// The peer ID stored at `path`, or nil when there is no file.
    private static func readPeerID(at path: String) throws -> PeerID? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MeshError(.invalidConfiguration, "cannot read \(path); check its permissions")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let parsed = PeerID(hex: text) else {
            throw MeshError(
                .invalidConfiguration,
                "\(path) does not hold a peer ID (64 hex characters); move it away to create a new identity")
        }
        return parsed
    }

    /// Loads or creates the Ed25519 identity in `dataDirectory/identity.key`,
    /// authenticates and encrypts every link with Noise XX, and seals every message
    /// end to end in an envelope to its recipient (MeshCrypto).
    /// - Throws: MeshCrypto's `MeshError`s (`identityFileInsecure`, `identityFileCorrupt`,
    ///   `identityFileIO`), whose messages say how to fix the file.
    public static func loadOrCreateCrypto(dataDirectory: String) throws -> LocalIdentity {
        try DataDirectory.prepare(dataDirectory)
        let identity = try NodeIdentity.loadOrCreate(directory: dataDirectory)
        return LocalIdentity(
            peerID: identity.peerID, security: NoiseLinkSecurity(identity: identity),
            sealer: EnvelopeSealer(identity: identity))
    }
}
