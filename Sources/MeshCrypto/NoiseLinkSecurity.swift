import MeshCore

/// SCMesh's link security: `Noise_XX_25519_ChaChaPoly_SHA256` with prologue
/// `"SCMesh/1"`, whose handshake payloads bind each side's Noise static key to its
/// Ed25519 identity (see `docs/PROTOCOL.md, part B`). Both sides learn and verify
/// the other's ``MeshCore/PeerID``; frames then travel as Noise transport messages
/// through a ``NoiseSessionCipher``.
///
/// The Noise static key is generated fresh when the value is created (once per node
/// start); the identity signature makes it the node's for that run.
///
/// ```swift
/// let security = NoiseLinkSecurity(identity: try NodeIdentity.loadOrCreate(directory: dataDir))
/// let session = try await security.handshake(role: .initiator, channel: channel, context: context)
/// ```
public struct NoiseLinkSecurity: LinkSecurity {
    /// The prologue both sides mix into the handshake.
    public static let prologue: [UInt8] = Array("SCMesh/1".utf8)
    /// The Noise protocol.
    public static let noiseProtocol = NoiseProtocol.linkProtocol

    /// Tunables.
    public struct Configuration: Sendable {
        /// Messages per direction between Noise rekeys. The protocol value is 2^20 and
        /// both ends of a link must use the same value (it is not negotiated): change
        /// it only in tests.
        public var rekeyInterval: UInt64

        /// Creates a configuration.
        public init(rekeyInterval: UInt64 = NoiseSessionCipher.defaultRekeyInterval) {
            self.rekeyInterval = rekeyInterval
        }
    }

    /// The node's identity.
    public let identity: NodeIdentity
    /// The settings.
    public let configuration: Configuration
    let noiseStatic: X25519KeyPair
    let proof: IdentityProof

    /// Creates the link security of a node, with a fresh Noise static key.
    public init(identity: NodeIdentity, configuration: Configuration = Configuration()) {
        self.init(identity: identity, configuration: configuration, noiseStatic: .generate())
    }

    /// Creates the link security with a given Noise static key and proof (tests use
    /// this to build impostors).
    init(
        identity: NodeIdentity,
        configuration: Configuration = Configuration(),
        noiseStatic: X25519KeyPair,
        proof: IdentityProof? = nil
    ) {
        self.identity = identity
        self.configuration = configuration
        self.noiseStatic = noiseStatic
        self.proof = proof ?? IdentityProof(identity: identity, noiseStatic: noiseStatic.publicKey)
    }

    /// The node's peer ID (its Ed25519 public key).
    public var localPeerID: PeerID { identity.peerID }

    /// Runs the XX handshake on a new link (a ``LinkHandshake`` driven over the channel).
    ///
    /// - Throws: ``MeshCore/MeshError`` `.handshakeFailed` when the remote's messages are
    ///   malformed, do not authenticate, carry a bad identity proof, or prove another
    ///   peer than `context.expectedPeer`; its `cause` is a `MeshError` with the specific
    ///   code (`.malformedHandshake`, `.decryptFailed`, `.invalidKey`,
    ///   `.malformedIdentityProof`, `.badSignature`, `.peerMismatch`). Errors of the
    ///   channel itself (such as `.linkClosed`) pass through unchanged. Timeouts are the
    ///   caller's.
    public func handshake(
        role: HandshakeRole,
        channel: any HandshakeChannel,
        context: HandshakeContext
    ) async throws -> SecureSession {
        var handshake = try LinkHandshake(security: self, role: role, context: context)
        if let first = try handshake.start() {
            try await channel.send(first)
        }
        while true {
            if let session = handshake.session { return session }
            let message = try await channel.receive()
            if let reply = try handshake.receive(message) {
                try await channel.send(reply)
            }
        }
    }
}
