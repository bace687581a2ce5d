import CSodium

/// The one Swift layer over libsodium: every primitive MeshCrypto uses, as byte
/// arrays in and out. No C type leaves it (``SecretBytes`` hides its pointer).
///
/// Every entry point touches ``ready`` first, so `sodium_init` runs exactly once,
/// before any other libsodium call, whichever entry point comes first.
package enum Sodium {
    /// True once `sodium_init` succeeded (it is thread-safe and idempotent; the
    /// lazy static runs it once).
    package static let ready: Bool = sodium_init() >= 0

    private static func ensureReady() {
        precondition(ready, "libsodium failed to initialise (sodium_init < 0): the process cannot do cryptography")
    }

    // MARK: Random, wiping

    /// `count` bytes from the system's CSPRNG (`randombytes_buf`).
    package static func randomBytes(_ count: Int) -> [UInt8] {
        ensureReady()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { randombytes_buf(buffer.baseAddress!, count) }
            initialized = count
        }
    }

    /// Overwrites the bytes with zeros in a way the compiler cannot elide.
    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress, raw.count > 0 { sodium_memzero(base, raw.count) }
        }
    }

    // MARK: Hashes

    /// SHA-256 of the bytes (32 bytes).
    package static func sha256(_ data: [UInt8]) -> [UInt8] {
        ensureReady()
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_hash_sha256(&out, data, UInt64(data.count))
        return out
    }

    /// Unkeyed BLAKE2b of the bytes with an `outputLength`-byte digest (16...64).
    package static func blake2b(_ data: [UInt8], outputLength: Int = 64) -> [UInt8] {
        blake2b(data[...], outputLength: outputLength)
    }

    /// Unkeyed BLAKE2b of a slice, without copying it.
    package static func blake2b(_ data: ArraySlice<UInt8>, outputLength: Int = 64) -> [UInt8] {
        ensureReady()
        var out = [UInt8](repeating: 0, count: outputLength)
        data.withUnsafeBufferPointer { input in
            _ = crypto_generichash(&out, outputLength, input.baseAddress, UInt64(input.count), nil, 0)
        }
        return out
    }

    /// An incremental SHA-256 or BLAKE2b-512 computation (libsodium's
    /// `_init/_update/_final`), so that Noise's HMAC and MixHash hash several parts
    /// without concatenating them.
    package struct StreamingHash: ~Copyable {
        /// Which hash.
        package enum Kind {
            /// SHA-256 (32-byte digest).
            case sha256
            /// BLAKE2b with a 64-byte digest.
            case blake2b512
            /// BLAKE2b with a 32-byte digest (the content digest of receipts).
            case blake2b256
        }

        private let kind: Kind
        private let state: UnsafeMutableRawPointer
        private let stateSize: Int

        /// Starts a hash.
        package init(_ kind: Kind) {
            ensureReady()
            self.kind = kind
            switch kind {
            case .sha256:
                stateSize = crypto_hash_sha256_statebytes()
                state = .allocate(byteCount: stateSize, alignment: 64)
                _ = crypto_hash_sha256_init(state.assumingMemoryBound(to: crypto_hash_sha256_state.self))
            case .blake2b512, .blake2b256:
                stateSize = crypto_generichash_statebytes()
                state = .allocate(byteCount: stateSize, alignment: 64)
                _ = crypto_generichash_init(OpaquePointer(state), nil, 0, kind == .blake2b512 ? 64 : 32)
            }
        }

        deinit {
            sodium_memzero(state, stateSize)
            state.deallocate()
        }

        /// Feeds bytes.
        package mutating func update(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            switch kind {
            case .sha256:
                _ = crypto_hash_sha256_update(
                    state.assumingMemoryBound(to: crypto_hash_sha256_state.self),
                    base,
                    UInt64(bytes.count)
                )
            case .blake2b512, .blake2b256:
                _ = crypto_generichash_update(OpaquePointer(state), base, UInt64(bytes.count))
            }
        }

        /// Feeds the bytes of an array.
        package mutating func update(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { update($0) }
        }

        /// The digest.
        package consuming func finalize() -> [UInt8] {
            switch kind {
            case .sha256:
                var out = [UInt8](repeating: 0, count: 32)
                _ = crypto_hash_sha256_final(state.assumingMemoryBound(to: crypto_hash_sha256_state.self), &out)
                return out
            case .blake2b512, .blake2b256:
                let length = kind == .blake2b512 ? 64 : 32
                var out = [UInt8](repeating: 0, count: length)
                _ = crypto_generichash_final(OpaquePointer(state), &out, length)
                return out
            }
        }
    }

    // MARK: Ed25519

    /// An Ed25519 keypair from a 32-byte seed: the 32-byte public key and
    /// libsodium's 64-byte secret key (seed || public key).
    package static func ed25519KeyPair(seed: [UInt8]) -> (publicKey: [UInt8], secretKey: SecretBytes) {
        ensureReady()
        precondition(seed.count == 32, "an Ed25519 seed has 32 bytes")
        var publicKey = [UInt8](repeating: 0, count: 32)
        let secretKey = SecretBytes(count: 64) { sk in
            _ = crypto_sign_seed_keypair(&publicKey, sk, seed)
        }
        return (publicKey, secretKey)
    }

    /// A detached Ed25519 signature (64 bytes) over the message.
    package static func ed25519Sign(_ message: [UInt8], secretKey: SecretBytes) -> [UInt8] {
        ensureReady()
        var signature = [UInt8](repeating: 0, count: 64)
        secretKey.withUnsafePointer { sk in
            _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count), sk)
        }
        return signature
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` by `publicKey`.
    /// Wrong lengths are simply invalid.
    package static func ed25519Verify(
        signature: some Collection<UInt8>,
        message: [UInt8],
        publicKey: some Collection<UInt8>
    ) -> Bool {
        ensureReady()
        guard signature.count == 64, publicKey.count == 32 else { return false }
        let signature = Array(signature)
        let publicKey = Array(publicKey)
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    /// The X25519 public key of an Ed25519 public key (birational map); nil when the
    /// bytes are not a valid Ed25519 point.
    package static func ed25519PublicKeyToX25519(_ publicKey: [UInt8]) -> [UInt8]? {
        ensureReady()
        guard publicKey.count == 32 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        guard crypto_sign_ed25519_pk_to_curve25519(&out, publicKey) == 0 else { return nil }
        return out
    }

    /// The X25519 private scalar of an Ed25519 secret key (SHA-512 of the seed, clamped).
    package static func ed25519SecretKeyToX25519(_ secretKey: SecretBytes) -> SecretBytes {
        ensureReady()
        return SecretBytes(count: 32) { out in
            secretKey.withUnsafePointer { sk in
                _ = crypto_sign_ed25519_sk_to_curve25519(out, sk)
            }
        }
    }

    // MARK: X25519

    /// The X25519 public key of a 32-byte private scalar.
    package static func x25519PublicKey(privateKey: SecretBytes) -> [UInt8] {
        ensureReady()
        var out = [UInt8](repeating: 0, count: 32)
        privateKey.withUnsafePointer { scalar in
            _ = crypto_scalarmult_base(&out, scalar)
        }
        return out
    }

    /// X25519(privateKey, publicKey); nil when the result is all zeros (the public key
    /// is a low-order point) or the public key is not 32 bytes.
    package static func x25519(privateKey: SecretBytes, publicKey: some Collection<UInt8>) -> SecretBytes? {
        ensureReady()
        guard publicKey.count == 32 else { return nil }
        let point = Array(publicKey)
        var ok = false
        let shared = SecretBytes(count: 32) { out in
            privateKey.withUnsafePointer { scalar in
                ok = crypto_scalarmult(out, scalar, point) == 0
            }
        }
        return ok ? shared : nil
    }

    // MARK: ChaCha20-Poly1305 (IETF, 96-bit nonce)

    /// The authentication tag length of both AEADs.
    package static let aeadTagLength = 16

    /// Runs `body` with Noise's ChaChaPoly nonce for `counter`: 32 zero bits, then
    /// the counter as a 64-bit little-endian integer (12 bytes, on the stack).
    private static func withNoiseNonce<T>(_ counter: UInt64, _ body: (UnsafePointer<UInt8>) -> T) -> T {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 12) { nonce in
            let base = nonce.baseAddress!
            for index in 0..<4 { base[index] = 0 }
            for index in 0..<8 { base[4 + index] = UInt8(truncatingIfNeeded: counter >> (8 * UInt64(index))) }
            return body(UnsafePointer(base))
        }
    }

    /// ChaCha20-Poly1305-IETF encryption under the Noise nonce for `counter`:
    /// ciphertext || 16-byte tag.
    package static func chachaPolyEncrypt(
        key: SecretBytes,
        counter: UInt64,
        ad: [UInt8],
        plaintext: UnsafeBufferPointer<UInt8>
    ) -> [UInt8] {
        ensureReady()
        let outputLength = plaintext.count + aeadTagLength
        return [UInt8](unsafeUninitializedCapacity: outputLength) { buffer, initialized in
            var written: UInt64 = 0
            withNoiseNonce(counter) { nonce in
                key.withUnsafePointer { k in
                    _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                        buffer.baseAddress!,
                        &written,
                        plaintext.baseAddress,
                        UInt64(plaintext.count),
                        ad,
                        UInt64(ad.count),
                        nil,
                        nonce,
                        k
                    )
                }
            }
            initialized = Int(written)
        }
    }

    /// ChaCha20-Poly1305-IETF decryption under the Noise nonce for `counter`; nil when
    /// the tag does not verify or the ciphertext is shorter than a tag.
    package static func chachaPolyDecrypt(
        key: SecretBytes,
        counter: UInt64,
        ad: [UInt8],
        ciphertext: UnsafeBufferPointer<UInt8>
    ) -> [UInt8]? {
        ensureReady()
        guard ciphertext.count >= aeadTagLength, let input = ciphertext.baseAddress else { return nil }
        var ok = false
        let plaintext = [UInt8](unsafeUninitializedCapacity: max(ciphertext.count - aeadTagLength, 1)) {
            buffer,
            initialized in
            var written: UInt64 = 0
            withNoiseNonce(counter) { nonce in
                key.withUnsafePointer { k in
                    ok =
                        crypto_aead_chacha20poly1305_ietf_decrypt(
                            buffer.baseAddress!,
                            &written,
                            nil,
                            input,
                            UInt64(ciphertext.count),
                            ad,
                            UInt64(ad.count),
                            nonce,
                            k
                        ) == 0
                }
            }
            initialized = ok ? Int(written) : 0
        }
        return ok ? plaintext : nil
    }

    /// Whether the ciphertext authenticates under the Noise nonce for `counter`
    /// (decrypts into a scratch buffer and wipes it). Used only on the failure path,
    /// to tell a replay or a reorder from tampering.
    package static func chachaPolyAuthenticates(
        key: SecretBytes,
        counter: UInt64,
        ad: [UInt8],
        ciphertext: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        guard var plaintext = chachaPolyDecrypt(key: key, counter: counter, ad: ad, ciphertext: ciphertext) else {
            return false
        }
        wipe(&plaintext)
        return true
    }

    // MARK: XChaCha20-Poly1305 (IETF, 192-bit nonce)

    /// XChaCha20-Poly1305-IETF encryption: ciphertext || 16-byte tag.
    package static func xchachaPolyEncrypt(key: SecretBytes, nonce: [UInt8], ad: [UInt8], plaintext: [UInt8]) -> [UInt8]
    {
        ensureReady()
        precondition(nonce.count == 24, "an XChaCha20 nonce has 24 bytes")
        let outputLength = plaintext.count + aeadTagLength
        return [UInt8](unsafeUninitializedCapacity: outputLength) { buffer, initialized in
            var written: UInt64 = 0
            key.withUnsafePointer { k in
                _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    buffer.baseAddress!,
                    &written,
                    plaintext,
                    UInt64(plaintext.count),
                    ad,
                    UInt64(ad.count),
                    nil,
                    nonce,
                    k
                )
            }
            initialized = Int(written)
        }
    }

    /// XChaCha20-Poly1305-IETF decryption; nil when the tag does not verify.
    package static func xchachaPolyDecrypt(
        key: SecretBytes,
        nonce: [UInt8],
        ad: [UInt8],
        ciphertext: ArraySlice<UInt8>
    ) -> [UInt8]? {
        ensureReady()
        guard nonce.count == 24, ciphertext.count >= aeadTagLength else { return nil }
        var ok = false
        let plaintext = [UInt8](unsafeUninitializedCapacity: max(ciphertext.count - aeadTagLength, 1)) {
            buffer,
            initialized in
            var written: UInt64 = 0
            ciphertext.withUnsafeBufferPointer { c in
                key.withUnsafePointer { k in
                    ok =
                        crypto_aead_xchacha20poly1305_ietf_decrypt(
                            buffer.baseAddress!,
                            &written,
                            nil,
                            c.baseAddress!,
                            UInt64(c.count),
                            ad,
                            UInt64(ad.count),
                            nonce,
                            k
                        ) == 0
                }
            }
            initialized = ok ? Int(written) : 0
        }
        return ok ? plaintext : nil
    }
}
