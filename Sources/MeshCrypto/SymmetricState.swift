/// Noise's SymmetricState (specification rev 34, section 5.2): the chaining key, the
/// handshake hash and a ``CipherState``.
public struct SymmetricState: Sendable {
    /// The hash function.
    public let hash: NoiseHash
    /// The cipher keyed from the chaining key.
    public private(set) var cipher: CipherState
    private var chainingKey: [UInt8]
    /// The handshake hash h.
    public private(set) var handshakeHash: [UInt8]

    /// InitializeSymmetric(protocolName).
    public init(protocolName: String, hash: NoiseHash) {
        self.hash = hash
        let name = Array(protocolName.utf8)
        if name.count <= hash.hashLength {
            handshakeHash = name + [UInt8](repeating: 0, count: hash.hashLength - name.count)
        } else {
            handshakeHash = hash.hash(name)
        }
        chainingKey = handshakeHash
        cipher = CipherState()
    }

    /// MixKey(ikm).
    public mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        var outputs = hash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        Sodium.wipe(&chainingKey)
        chainingKey = outputs[0]
        cipher = CipherState(secret: SecretBytes(outputs[1].prefix(32)))
        Sodium.wipe(&outputs[1])
    }

    /// MixHash(data).
    public mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = hash.hash(handshakeHash, data)
    }

    /// MixKeyAndHash(ikm) (used by pre-shared keys).
    public mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        var outputs = hash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 3)
        Sodium.wipe(&chainingKey)
        chainingKey = outputs[0]
        mixHash(outputs[1])
        cipher = CipherState(secret: SecretBytes(outputs[2].prefix(32)))
        Sodium.wipe(&outputs[2])
    }

    /// EncryptAndHash(plaintext).
    /// - Throws: what ``CipherState/encrypt(ad:plaintext:)`` throws.
    public mutating func encryptAndHash(_ plaintext: [UInt8]) throws -> [UInt8] {
        let ciphertext = try cipher.encrypt(ad: handshakeHash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    /// DecryptAndHash(ciphertext).
    /// - Throws: ``MeshCore/MeshError`` `.decryptFailed` when the tag does not verify.
    public mutating func decryptAndHash(_ ciphertext: [UInt8]) throws -> [UInt8] {
        let plaintext = try cipher.decrypt(ad: handshakeHash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Split(): the two transport CipherStates, initiator-to-responder first.
    public mutating func split() -> (CipherState, CipherState) {
        var outputs = hash.hkdf(chainingKey: chainingKey, inputKeyMaterial: [], outputs: 2)
        let first = CipherState(secret: SecretBytes(outputs[0].prefix(32)))
        let second = CipherState(secret: SecretBytes(outputs[1].prefix(32)))
        Sodium.wipe(&outputs[0])
        Sodium.wipe(&outputs[1])
        Sodium.wipe(&chainingKey)
        return (first, second)
    }
}
