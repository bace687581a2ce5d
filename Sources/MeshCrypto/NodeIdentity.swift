import MeshCore

/// A node's identity: an Ed25519 keypair. "You are your keypair": the node's
/// ``PeerID`` is its 32-byte Ed25519 public key itself (no hash), so anyone who knows
/// a peer ID can verify that peer's signatures and seal envelopes to it.
///
/// ```swift
/// let identity = try NodeIdentity.loadOrCreate(directory: dataDir)
/// print(identity.peerID.short, identity.publicKeyHex)
/// ```
public struct NodeIdentity: Sendable, CustomStringConvertible {
    /// The file name of the secret key inside a node's data directory.
    public static let fileName = "identity.key"

    /// The Ed25519 public key (32 bytes).
    public let publicKey: [UInt8]
    /// The peer ID: the Ed25519 public key.
    public let peerID: PeerID
    let secretKey: SecretBytes
    /// The identity's X25519 keypair (converted from the Ed25519 keys), for opening
    /// envelopes; computed once.
    let x25519KeyPair: X25519KeyPair

    /// A new random identity (for tests and for first start).
    public static func generate() -> NodeIdentity {
        var seed = Sodium.randomBytes(32)
        defer { Sodium.wipe(&seed) }
        return NodeIdentity(validSeed: seed)
    }

    /// The identity of a 32-byte Ed25519 seed (deterministic).
    /// - Throws: ``MeshCore/MeshError`` `.invalidArgument` when the seed is not 32 bytes.
    public init(seed: [UInt8]) throws {
        guard seed.count == 32 else {
            throw MeshError(.invalidArgument, "an Ed25519 seed has 32 bytes, got \(seed.count)")
        }
        self.init(validSeed: seed)
    }

    private init(validSeed seed: [UInt8]) {
        let (publicKey, secretKey) = Sodium.ed25519KeyPair(seed: seed)
        self.publicKey = publicKey
        self.secretKey = secretKey
        x25519KeyPair = X25519KeyPair(secret: Sodium.ed25519SecretKeyToX25519(secretKey))
        // A 32-byte array always makes a peer ID.
        peerID = try! PeerID(bytes: publicKey)
    }

    /// The public key as 64 lowercase hexadecimal characters (the peer ID's hex form).
    public var publicKeyHex: String { Hex.encode(publicKey) }

    /// The 32-byte seed the keypair derives from (what ``loadOrCreate(directory:)``
    /// stores). Handle with care.
    var seed: [UInt8] { Array(secretKey.bytes.prefix(32)) }

    /// The short peer ID only: never the secret key.
    public var description: String { "NodeIdentity(\(peerID.short))" }

    /// A detached Ed25519 signature (64 bytes) over `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        Sodium.ed25519Sign(message, secretKey: secretKey)
    }

    /// Whether `signature` is `signer`'s Ed25519 signature over `message`.
    /// Malformed signatures or keys are simply invalid.
    public static func verify(signature: [UInt8], message: [UInt8], signer: PeerID) -> Bool {
        Sodium.ed25519Verify(signature: signature, message: message, publicKey: signer.bytes)
    }

    /// Loads the identity from `directory/identity.key`, creating the directory (mode
    /// 0700) and a new identity (file mode 0600, written atomically) on first run.
    ///
    /// File layout (69 bytes): `"SCID"`, version `0x01`, the 32-byte Ed25519 seed,
    /// the 32-byte public key (checked against the seed on load).
    ///
    /// - Throws: ``MeshCore/MeshError`` `.identityFileInsecure` when the file is
    ///   readable or writable by group or others (fix: `chmod 600 <file>`),
    ///   `.identityFileCorrupt` when it does not parse or its keys disagree (fix:
    ///   restore it from a backup, or move it away to start as a new peer),
    ///   `.identityFileIO` when the OS refuses a read or write.
    public static func loadOrCreate(directory: String) throws -> NodeIdentity {
        try IdentityFile(directory: directory).loadOrCreate()
    }
}
