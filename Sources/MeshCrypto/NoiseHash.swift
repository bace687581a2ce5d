/// A Noise hash function with the HMAC and HKDF the Noise specification (rev 34,
/// section 4.3) builds on it. The hashes come from libsodium; HMAC and HKDF are the
/// Noise protocol's own construction on top.
public enum NoiseHash: Sendable, Hashable, CaseIterable {
    /// SHA-256: 32-byte digest, 64-byte block.
    case sha256
    /// BLAKE2b with a 64-byte digest, 128-byte block.
    case blake2b

    /// The name in a Noise protocol name: `"SHA256"` or `"BLAKE2b"`.
    public var name: String {
        switch self {
        case .sha256: "SHA256"
        case .blake2b: "BLAKE2b"
        }
    }

    /// HASHLEN: the digest length in bytes.
    public var hashLength: Int {
        switch self {
        case .sha256: 32
        case .blake2b: 64
        }
    }

    /// BLOCKLEN: the block length HMAC pads keys to.
    public var blockLength: Int {
        switch self {
        case .sha256: 64
        case .blake2b: 128
        }
    }

    /// Parses a Noise hash name (`"SHA256"`, `"BLAKE2b"`).
    public init?(name: String) {
        guard let hash = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = hash
    }

    /// HASH(data).
    public func hash(_ data: [UInt8]) -> [UInt8] {
        hash(data, [])
    }

    /// HASH(first || second), without building the concatenation.
    func hash(_ first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        var hasher = Sodium.StreamingHash(self == .sha256 ? .sha256 : .blake2b512)
        hasher.update(first)
        hasher.update(second)
        return hasher.finalize()
    }

    /// HMAC-HASH(key, data) per RFC 2104 with this hash's block length.
    public func hmac(key: [UInt8], data: [UInt8]) -> [UInt8] {
        hmac(key: key, data: data, [])
    }

    /// HMAC-HASH(key, first || second).
    func hmac(key: [UInt8], data first: [UInt8], _ second: [UInt8]) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: blockLength)
        defer { Sodium.wipe(&block) }
        let keyBytes = key.count > blockLength ? hash(key) : key
        block.withUnsafeMutableBufferPointer { padded in
            for index in keyBytes.indices { padded[index] = keyBytes[index] ^ 0x36 }
            for index in keyBytes.count..<padded.count { padded[index] = 0x36 }
        }
        var inner = Sodium.StreamingHash(self == .sha256 ? .sha256 : .blake2b512)
        inner.update(block)
        inner.update(first)
        inner.update(second)
        let innerDigest = inner.finalize()
        block.withUnsafeMutableBufferPointer { padded in
            for index in padded.indices { padded[index] ^= 0x36 ^ 0x5c }
        }
        var outer = Sodium.StreamingHash(self == .sha256 ? .sha256 : .blake2b512)
        outer.update(block)
        outer.update(innerDigest)
        return outer.finalize()
    }

    /// HKDF(chainingKey, inputKeyMaterial, numOutputs) as Noise defines it: two or
    /// three outputs of HASHLEN bytes each.
    public func hkdf(chainingKey: [UInt8], inputKeyMaterial: [UInt8], outputs: Int) -> [[UInt8]] {
        precondition(outputs == 2 || outputs == 3, "Noise HKDF yields two or three outputs")
        var tempKey = hmac(key: chainingKey, data: inputKeyMaterial)
        defer { Sodium.wipe(&tempKey) }
        let output1 = hmac(key: tempKey, data: [0x01])
        let output2 = hmac(key: tempKey, data: output1, [0x02])
        guard outputs == 3 else { return [output1, output2] }
        return [output1, output2, hmac(key: tempKey, data: output2, [0x03])]
    }
}
