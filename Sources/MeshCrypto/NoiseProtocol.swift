/// A Noise protocol with DH 25519 and cipher ChaChaPoly: a handshake pattern and a
/// hash, named like `Noise_XX_25519_ChaChaPoly_SHA256`.
public struct NoiseProtocol: Sendable, Hashable, CustomStringConvertible {
    /// The handshake pattern.
    public let pattern: HandshakePattern
    /// The hash function.
    public let hash: NoiseHash

    /// Creates a protocol from a pattern and a hash.
    public init(pattern: HandshakePattern, hash: NoiseHash) {
        self.pattern = pattern
        self.hash = hash
    }

    /// Parses `Noise_<pattern>_25519_ChaChaPoly_<SHA256|BLAKE2b>`; nil for anything this
    /// implementation does not support.
    public init?(name: String) {
        let parts = name.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "Noise", parts[2] == "25519", parts[3] == "ChaChaPoly",
            let pattern = HandshakePattern(name: String(parts[1])),
            let hash = NoiseHash(name: String(parts[4]))
        else { return nil }
        self.init(pattern: pattern, hash: hash)
    }

    /// The full protocol name, hashed into the handshake.
    public var name: String { "Noise_\(pattern.name)_25519_ChaChaPoly_\(hash.name)" }

    /// The name.
    public var description: String { name }

    /// The SCMesh link protocol: `Noise_XX_25519_ChaChaPoly_SHA256`.
    public static let linkProtocol = NoiseProtocol(pattern: .xx, hash: .sha256)
}
