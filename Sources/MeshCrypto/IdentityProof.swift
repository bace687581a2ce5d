import MeshCore

/// The SCMesh payload of Noise XX messages 2 and 3: it binds the sender's Noise static
/// key to its Ed25519 identity. Layout (`docs/PROTOCOL.md, part B`):
///
/// ```
/// offset  size  field
///      0    32  Ed25519 identity public key (= the sender's peer ID)
///     32    64  Ed25519 signature over "SCMesh-noise-static-v1" || Noise static public key
///     96     1  protocol version (1)
///     97     2  capabilities, big-endian (`Capabilities`; unknown bits are ignored)
///     99     …  reserved for extensions: send nothing, ignore what arrives
/// ```
package struct IdentityProof: Sendable, Equatable {
    /// The domain-separation prefix of the signed message.
    static let context: [UInt8] = Array("SCMesh-noise-static-v1".utf8)
    /// The fixed part's length.
    package static let length = 32 + 64 + 1 + 2

    var identityKey: [UInt8]
    var signature: [UInt8]
    var version: UInt8
    var capabilities: UInt16

    /// The proof `identity` makes for `noiseStatic`.
    init(identity: NodeIdentity, noiseStatic: [UInt8], version: UInt8 = Frame.version, capabilities: UInt16 = 0) {
        identityKey = identity.publicKey
        signature = identity.sign(Self.context + noiseStatic)
        self.version = version
        self.capabilities = capabilities
    }

    init(identityKey: [UInt8], signature: [UInt8], version: UInt8, capabilities: UInt16) {
        self.identityKey = identityKey
        self.signature = signature
        self.version = version
        self.capabilities = capabilities
    }

    package var encoded: [UInt8] {
        identityKey + signature + [version, UInt8(capabilities >> 8), UInt8(capabilities & 0xFF)]
    }

    /// Parses a payload (never traps).
    /// - Throws: `.malformedIdentityProof` when it is shorter than the fixed part.
    package static func parse(_ payload: [UInt8]) throws -> IdentityProof {
        guard payload.count >= length else {
            throw MeshError(
                .malformedIdentityProof,
                "the handshake payload has \(payload.count) bytes; an SCMesh identity proof needs at least \(length)"
            )
        }
        return IdentityProof(
            identityKey: Array(payload[0..<32]),
            signature: Array(payload[32..<96]),
            version: payload[96],
            capabilities: UInt16(payload[97]) << 8 | UInt16(payload[98])
        )
    }

    /// Checks the proof against the Noise static key the handshake authenticated and
    /// returns the proven peer ID.
    /// - Throws: `.malformedIdentityProof` for another protocol version,
    ///   `.badSignature` when the signature does not bind `noiseStatic` to the key.
    package func verify(noiseStatic: [UInt8], address: String = "the remote end") throws -> PeerID {
        guard version == Frame.version else {
            throw MeshError(.malformedIdentityProof, Capabilities.versionMismatch(remote: version, at: address))
        }
        let peer = try PeerID(bytes: identityKey)
        guard Sodium.ed25519Verify(signature: signature, message: Self.context + noiseStatic, publicKey: identityKey)
        else {
            throw MeshError(
                .badSignature,
                "the identity proof of \(peer.short) does not sign this handshake's Noise static key: an impostor or a corrupted handshake"
            )
        }
        return peer
    }
}
