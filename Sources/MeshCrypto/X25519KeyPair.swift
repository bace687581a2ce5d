import MeshCore

/// A Curve25519 Diffie-Hellman keypair (Noise's DH function "25519").
public struct X25519KeyPair: Sendable {
    /// The 32-byte public key.
    public let publicKey: [UInt8]
    let privateKey: SecretBytes

    /// A fresh keypair from the system's CSPRNG.
    public static func generate() -> X25519KeyPair {
        var seed = Sodium.randomBytes(32)
        defer { Sodium.wipe(&seed) }
        return X25519KeyPair(privateKey: seed)
    }

    /// The keypair of a 32-byte private key (as Noise test vectors give them).
    /// - Precondition: `privateKey` has 32 bytes.
    public init(privateKey: [UInt8]) {
        precondition(privateKey.count == 32, "an X25519 private key has 32 bytes")
        self.init(secret: SecretBytes(privateKey))
    }

    init(secret: SecretBytes) {
        privateKey = secret
        publicKey = Sodium.x25519PublicKey(privateKey: secret)
    }

    /// DH(self, publicKey): the 32-byte shared secret.
    /// - Throws: ``MeshCore/MeshError`` `.invalidKey` when `publicKey` is a low-order
    ///   point (the result would be all zeros) or not 32 bytes.
    func sharedSecret(with remotePublicKey: [UInt8]) throws -> SecretBytes {
        guard let shared = Sodium.x25519(privateKey: privateKey, publicKey: remotePublicKey) else {
            throw MeshError(
                .invalidKey,
                "X25519 with the remote's public key gave no usable secret (low-order point): the remote is misbehaving; close the link"
            )
        }
        return shared
    }
}
