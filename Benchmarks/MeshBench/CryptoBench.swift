import CSodium
import MeshCore
import MeshCrypto

/// Crypto figures, each next to a raw-libsodium baseline measured in the same run:
/// XX handshakes per second (both sides in process) against the bare primitives a
/// handshake needs; sealed envelopes and the link cipher in MB/s against
/// `crypto_aead_chacha20poly1305_ietf` on the same sizes.
enum CryptoBench {
    static func run() throws -> [BenchFigure] {
        _ = sodium_init()
        var figures: [BenchFigure] = []
        figures.append(try handshakes())
        for size in [1 << 10, 64 << 10] {
            figures += try envelopes(size: size)
        }
        for size in [1 << 10, 65_000] {
            figures += try link(size: size)
        }
        return figures
    }

    // MARK: Measurement

    /// Seconds per iteration: the best of `rounds` rounds of `iterations` each.
    static func secondsPerIteration(rounds: Int = 5, iterations: Int, _ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        var best = Double.infinity
        for _ in 0..<rounds {
            let start = clock.now
            for _ in 0..<iterations { try body() }
            let elapsed = clock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            best = min(best, seconds / Double(iterations))
        }
        return best
    }

    static func megabytesPerSecond(bytes: Int, seconds: Double) -> Double {
        Double(bytes) / seconds / 1_000_000
    }

    // MARK: Raw libsodium baselines

    /// Raw `crypto_aead_chacha20poly1305_ietf` on buffers allocated once.
    final class RawAEAD {
        let size: Int
        let key = UnsafeMutablePointer<UInt8>.allocate(capacity: 32)
        let nonce = UnsafeMutablePointer<UInt8>.allocate(capacity: 12)
        let plaintext: UnsafeMutablePointer<UInt8>
        let ciphertext: UnsafeMutablePointer<UInt8>
        let decrypted: UnsafeMutablePointer<UInt8>

        init(size: Int) {
            self.size = size
            key.initialize(repeating: 0x42, count: 32)
            nonce.initialize(repeating: 0, count: 12)
            plaintext = .allocate(capacity: size)
            plaintext.initialize(repeating: 0xA5, count: size)
            ciphertext = .allocate(capacity: size + 16)
            ciphertext.initialize(repeating: 0, count: size + 16)
            decrypted = .allocate(capacity: size)
            decrypted.initialize(repeating: 0, count: size)
        }

        deinit {
            for pointer in [key, nonce, plaintext, ciphertext, decrypted] { pointer.deallocate() }
        }

        func encrypt() {
            var length: UInt64 = 0
            _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                ciphertext,
                &length,
                plaintext,
                UInt64(size),
                nil,
                0,
                nil,
                nonce,
                key
            )
        }

        func decrypt() throws {
            var length: UInt64 = 0
            guard
                crypto_aead_chacha20poly1305_ietf_decrypt(
                    decrypted,
                    &length,
                    nil,
                    ciphertext,
                    UInt64(size + 16),
                    nil,
                    0,
                    nonce,
                    key
                ) == 0
            else {
                throw MeshError(.decryptFailed, "baseline decryption failed")
            }
        }
    }

    // MARK: Figures

    static func handshakes() throws -> BenchFigure {
        let alice = NoiseLinkSecurity(identity: .generate())
        let bob = NoiseLinkSecurity(identity: .generate())
        let context = HandshakeContext(transportName: "bench", remoteAddress: "in-process")
        let ours = try secondsPerIteration(rounds: 3, iterations: 100) {
            var initiator = try LinkHandshake(security: alice, role: .initiator, context: context)
            var responder = try LinkHandshake(security: bob, role: .responder, context: context)
            let message1 = try initiator.start()!
            _ = try responder.start()
            let message2 = try responder.receive(message1)!
            let message3 = try initiator.receive(message2)!
            _ = try responder.receive(message3)
            guard initiator.session != nil, responder.session != nil else {
                throw MeshError(.handshakeFailed, "bench handshake did not complete")
            }
        }
        // The primitives of one XX handshake, both sides: 2 X25519 key generations,
        // 6 X25519 DHs, 2 Ed25519 verifications (the identity proofs are signed once
        // per node start, not per handshake).
        var scalar = [UInt8](repeating: 7, count: 32)
        var point = [UInt8](repeating: 0, count: 32)
        var shared = [UInt8](repeating: 0, count: 32)
        _ = crypto_scalarmult_base(&point, scalar)
        let message = [UInt8](repeating: 1, count: 54)
        var publicKey = [UInt8](repeating: 0, count: 32)
        var secretKey = [UInt8](repeating: 0, count: 64)
        var signature = [UInt8](repeating: 0, count: 64)
        _ = crypto_sign_keypair(&publicKey, &secretKey)
        _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count), secretKey)
        let raw = try secondsPerIteration(rounds: 3, iterations: 100) {
            for _ in 0..<2 { _ = crypto_scalarmult_base(&point, scalar) }
            for _ in 0..<6 { _ = crypto_scalarmult(&shared, scalar, point) }
            for _ in 0..<2 {
                guard crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0 else {
                    throw MeshError(.badSignature, "baseline verification failed")
                }
            }
            scalar[0] &+= 1
        }
        return BenchFigure(
            name: "XX handshakes (both sides)",
            value: 1 / ours,
            unit: "handshakes/s",
            baseline: ("raw libsodium primitives of one XX", 1 / raw)
        )
    }

    static func envelopes(size: Int) throws -> [BenchFigure] {
        let alice = NodeIdentity.generate()
        let bob = NodeIdentity.generate()
        let payload = [UInt8](repeating: 0x5A, count: size)
        let iterations = size >= 65536 ? 100 : 200
        let raw = RawAEAD(size: size)
        let rawEncrypt = secondsPerIteration(iterations: iterations) { raw.encrypt() }
        let rawDecrypt = try secondsPerIteration(iterations: iterations) { try raw.decrypt() }
        var sealed: [UInt8] = []
        let seal = try secondsPerIteration(iterations: iterations) {
            sealed = try Envelope.seal(payload, to: bob.peerID, from: alice)
        }
        let open = try secondsPerIteration(iterations: iterations) {
            guard try Envelope.open(sealed, as: bob).payload.count == size else {
                throw MeshError(.decryptFailed, "bench envelope did not round-trip")
            }
        }
        let label = size >= 1024 * 1024 ? "\(size >> 20) MiB" : "\(size >> 10) KiB"
        return [
            BenchFigure(
                name: "envelope seal \(label)",
                value: megabytesPerSecond(bytes: size, seconds: seal),
                unit: "MB/s",
                baseline: ("raw chacha20poly1305_ietf encrypt", megabytesPerSecond(bytes: size, seconds: rawEncrypt))
            ),
            BenchFigure(
                name: "envelope open \(label)",
                value: megabytesPerSecond(bytes: size, seconds: open),
                unit: "MB/s",
                baseline: ("raw chacha20poly1305_ietf decrypt", megabytesPerSecond(bytes: size, seconds: rawDecrypt))
            ),
        ]
    }

    /// Raw `crypto_aead_chacha20poly1305_ietf` encryption of `size`-byte frames on
    /// one core, in MB/s: the physical limit of an encrypted stream per core.
    static func rawSealRate(size: Int) -> Double {
        let raw = RawAEAD(size: size)
        let iterations = size >= 60_000 ? 2_000 : 20_000
        let seconds = secondsPerIteration(rounds: 3, iterations: iterations) { raw.encrypt() }
        return megabytesPerSecond(bytes: size, seconds: seconds)
    }

    static func link(size: Int) throws -> [BenchFigure] {
        let key = [UInt8](repeating: 0x42, count: 32)
        let sender = NoiseSessionCipher(send: CipherState(key: key), receive: CipherState(key: key))
        let receiver = NoiseSessionCipher(send: CipherState(key: key), receive: CipherState(key: key))
        let sealOnly = NoiseSessionCipher(send: CipherState(key: key), receive: CipherState(key: key))
        let frame = [UInt8](repeating: 0xA5, count: size)
        let iterations = size >= 60_000 ? 1_000 : 20_000
        let raw = RawAEAD(size: size)
        // Interleave ours and raw so that both see the same machine load. Sealed
        // frames are dropped at once (as a link does after sending); the frames to
        // open are sealed just before the timed part, in batches of at most 64 KiB so
        // that they are as cache-warm as the baseline's single buffer.
        var rawEncrypt = Double.infinity
        var rawDecrypt = Double.infinity
        var seal = Double.infinity
        var open = Double.infinity
        let batch = max(1, min(iterations, 65_536 / size))
        for _ in 0..<3 {
            rawEncrypt = min(rawEncrypt, secondsPerIteration(rounds: 1, iterations: iterations) { raw.encrypt() })
            seal = min(
                seal,
                try secondsPerIteration(rounds: 1, iterations: iterations) {
                    guard try sealOnly.seal(frame).count == size + 16 else {
                        throw MeshError(.cipherFailed, "bench seal")
                    }
                }
            )
            rawDecrypt = min(
                rawDecrypt,
                try secondsPerIteration(rounds: 1, iterations: iterations) { try raw.decrypt() }
            )
            var total = Duration.zero
            for _ in 0..<(iterations / batch) {
                let ciphertexts = try (0..<batch).map { _ in try sender.seal(frame) }
                let start = ContinuousClock.now
                for ciphertext in ciphertexts {
                    guard try receiver.open(ciphertext).count == size else {
                        throw MeshError(.decryptFailed, "bench open")
                    }
                }
                total += ContinuousClock.now - start
            }
            let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) * 1e-18
            open = min(open, seconds / Double(iterations / batch * batch))
        }
        let label = size >= 60_000 ? "\(size / 1000) KB" : "\(size >> 10) KiB"
        return [
            BenchFigure(
                name: "link seal \(label) frames",
                value: megabytesPerSecond(bytes: size, seconds: seal),
                unit: "MB/s",
                baseline: ("raw chacha20poly1305_ietf encrypt", megabytesPerSecond(bytes: size, seconds: rawEncrypt))
            ),
            BenchFigure(
                name: "link open \(label) frames",
                value: megabytesPerSecond(bytes: size, seconds: open),
                unit: "MB/s",
                baseline: ("raw chacha20poly1305_ietf decrypt", megabytesPerSecond(bytes: size, seconds: rawDecrypt))
            ),
        ]
    }
}
