import MeshCore

/// Noise's CipherState (specification rev 34, section 5.1) for the ChaChaPoly cipher:
/// a key and a 64-bit nonce counter.
///
/// Without a key, encryption and decryption return their input unchanged (the
/// first messages of a handshake travel in clear).
public struct CipherState: Sendable {
    /// The nonce 2^64 - 1 is reserved for ``rekey()``; reaching it is an error.
    public static let maxNonce = UInt64.max

    private(set) var key: SecretBytes?
    /// The next nonce to use.
    public var nonce: UInt64

    /// A CipherState without a key (InitializeKey(empty)).
    public init() {
        key = nil
        nonce = 0
    }

    /// A CipherState with `key` and nonce 0 (InitializeKey(key)).
    /// - Precondition: `key` has 32 bytes.
    public init(key: [UInt8]) {
        precondition(key.count == 32, "a ChaChaPoly key has 32 bytes")
        self.init(secret: SecretBytes(key))
    }

    init(secret: SecretBytes?) {
        key = secret
        nonce = 0
    }

    /// Whether a key is set (HasKey()).
    public var hasKey: Bool { key != nil }

    /// EncryptWithAd(ad, plaintext): encrypts under the current nonce and increments it.
    /// - Throws: ``MeshCore/MeshError`` `.cipherFailed` when the nonce space is exhausted.
    public mutating func encrypt(ad: [UInt8] = [], plaintext: [UInt8]) throws -> [UInt8] {
        try plaintext.withUnsafeBufferPointer { try encrypt(ad: ad, plaintext: $0) }
    }

    /// EncryptWithAd on a buffer (no copy of the plaintext).
    mutating func encrypt(ad: [UInt8], plaintext: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        guard let key else { return Array(plaintext) }
        guard nonce < Self.maxNonce else {
            throw MeshError(
                .cipherFailed,
                "the Noise nonce counter is exhausted (2^64 - 1 messages): start a new session"
            )
        }
        let ciphertext = Sodium.chachaPolyEncrypt(key: key, counter: nonce, ad: ad, plaintext: plaintext)
        nonce += 1
        return ciphertext
    }

    /// DecryptWithAd(ad, ciphertext): decrypts under the current nonce and increments
    /// it; on failure the nonce stays where it was.
    /// - Throws: ``MeshCore/MeshError`` `.decryptFailed` when the tag does not verify,
    ///   `.cipherFailed` when the nonce space is exhausted.
    public mutating func decrypt(ad: [UInt8] = [], ciphertext: [UInt8]) throws -> [UInt8] {
        try ciphertext.withUnsafeBufferPointer { try decrypt(ad: ad, ciphertext: $0) }
    }

    /// DecryptWithAd on a buffer.
    mutating func decrypt(ad: [UInt8], ciphertext: UnsafeBufferPointer<UInt8>) throws -> [UInt8] {
        guard let key else { return Array(ciphertext) }
        guard nonce < Self.maxNonce else {
            throw MeshError(
                .cipherFailed,
                "the Noise nonce counter is exhausted (2^64 - 1 messages): start a new session"
            )
        }
        guard let plaintext = Sodium.chachaPolyDecrypt(key: key, counter: nonce, ad: ad, ciphertext: ciphertext) else {
            throw MeshError(
                .decryptFailed,
                "a \(ciphertext.count)-byte Noise message did not authenticate under nonce \(nonce)"
            )
        }
        nonce += 1
        return plaintext
    }

    /// Rekey(): k = the first 32 bytes of ENCRYPT(k, 2^64 - 1, empty, 32 zero bytes).
    /// The nonce is not reset. No-op without a key.
    public mutating func rekey() {
        guard let key else { return }
        let zeros = [UInt8](repeating: 0, count: 32)
        var next = zeros.withUnsafeBufferPointer {
            Sodium.chachaPolyEncrypt(key: key, counter: Self.maxNonce, ad: [], plaintext: $0)
        }
        self.key = SecretBytes(next.prefix(32))
        Sodium.wipe(&next)
    }
}
