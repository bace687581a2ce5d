import MeshCore
import Synchronization

/// The cipher of one Noise-secured link: Noise transport messages (ChaCha20-Poly1305
/// with an implicit 64-bit nonce counter per direction), Noise `Rekey()` every
/// ``rekeyInterval`` messages in each direction.
///
/// ``seal(_:)`` and ``open(_:)`` each run serially (one lock per direction) and may
/// run concurrently with each other. Any failure of ``open(_:)`` poisons the cipher:
/// every later call throws `.cipherFailed` and the link must close.
///
/// Noise transport messages carry no nonce, so a replayed, reordered or lost message
/// shows up as an authentication failure. To report something more useful, a failed
/// ``open(_:)`` tries the ``classificationWindow`` nonces before and after the
/// expected one (same key epoch): a match before is a `.replay`, after is
/// `.reordered` (or lost messages); no match is `.decryptFailed` (tampered, corrupted,
/// or replayed/reordered from beyond the window or across a rekey).
public final class NoiseSessionCipher: SessionCipher {
    /// The largest plaintext: 65,535 - 16 bytes, so that a message fits in one Noise
    /// transport message.
    public static let maxPlaintextLength = HandshakeState.maxMessageLength - Sodium.aeadTagLength
    /// Nonces tried on each side of the expected one to classify a failure.
    public static let classificationWindow: UInt64 = 64
    /// The default number of messages per direction between rekeys (2^20).
    public static let defaultRekeyInterval: UInt64 = 1 << 20

    private struct Direction {
        var cipher: CipherState
        /// The nonce at which the current key took effect.
        var epochStart: UInt64 = 0
    }

    /// Messages per direction between two `Rekey()`s.
    public let rekeyInterval: UInt64
    private let sending: Mutex<Direction>
    private let receiving: Mutex<Direction>
    private let failed = Atomic<Bool>(false)

    /// Wraps the two transport ciphers of a finished handshake.
    /// - Parameters:
    ///   - send: the cipher for outbound messages.
    ///   - receive: the cipher for inbound messages.
    ///   - rekeyInterval: messages per direction between rekeys (at least 1).
    public init(send: CipherState, receive: CipherState, rekeyInterval: UInt64 = defaultRekeyInterval) {
        self.rekeyInterval = max(rekeyInterval, 1)
        sending = Mutex(Direction(cipher: send))
        receiving = Mutex(Direction(cipher: receive))
    }

    /// 16: the Poly1305 tag.
    public var overhead: Int { Sodium.aeadTagLength }

    /// Whether a failure has poisoned the cipher.
    public var hasFailed: Bool { failed.load(ordering: .acquiring) }

    /// Encrypts one frame as the next Noise transport message.
    /// - Throws: ``MeshCore/MeshError`` `.frameTooLarge` above ``maxPlaintextLength``
    ///   bytes, `.cipherFailed` after a failure.
    public func seal(_ plaintext: [UInt8]) throws -> [UInt8] {
        try checkUsable()
        guard plaintext.count <= Self.maxPlaintextLength else {
            throw MeshError(
                .frameTooLarge,
                "a link frame is at most \(Self.maxPlaintextLength) bytes before encryption; got \(plaintext.count): fragment it first"
            )
        }
        let interval = rekeyInterval
        return try sending.withLock { direction throws(MeshError) -> [UInt8] in
            let ciphertext: [UInt8]
            do {
                ciphertext = try plaintext.withUnsafeBufferPointer {
                    try direction.cipher.encrypt(ad: [], plaintext: $0)
                }
            } catch {
                throw poison(error as? MeshError ?? MeshError(.cipherFailed, "sealing failed", cause: error))
            }
            if direction.cipher.nonce % interval == 0 {
                direction.cipher.rekey()
                direction.epochStart = direction.cipher.nonce
            }
            return ciphertext
        }
    }

    /// Decrypts the next inbound Noise transport message.
    /// - Throws: ``MeshCore/MeshError`` `.replay`, `.reordered` or `.decryptFailed`
    ///   (see the type's summary), `.frameTooLarge` above 65,535 bytes, `.cipherFailed`
    ///   after an earlier failure. Every failure poisons the cipher: close the link.
    public func open(_ ciphertext: [UInt8]) throws -> [UInt8] {
        try checkUsable()
        guard ciphertext.count <= HandshakeState.maxMessageLength else {
            throw poison(
                MeshError(
                    .frameTooLarge,
                    "an inbound link message has \(ciphertext.count) bytes; Noise allows at most \(HandshakeState.maxMessageLength): closing the link"
                )
            )
        }
        let interval = rekeyInterval
        return try receiving.withLock { direction throws(MeshError) -> [UInt8] in
            let expected = direction.cipher.nonce
            let result: [UInt8]? = ciphertext.withUnsafeBufferPointer { buffer in
                guard let key = direction.cipher.key, expected < CipherState.maxNonce else { return nil }
                return Sodium.chachaPolyDecrypt(key: key, counter: expected, ad: [], ciphertext: buffer)
            }
            guard let plaintext = result else {
                throw poison(classify(ciphertext, direction: direction))
            }
            direction.cipher.nonce += 1
            if direction.cipher.nonce % interval == 0 {
                direction.cipher.rekey()
                direction.epochStart = direction.cipher.nonce
            }
            return plaintext
        }
    }

    private func checkUsable() throws(MeshError) {
        if failed.load(ordering: .acquiring) {
            throw MeshError(
                .cipherFailed,
                "this link's cipher failed earlier (forged, replayed or reordered message) and refuses further use; close the link and reconnect"
            )
        }
    }

    private func poison(_ error: MeshError) -> MeshError {
        failed.store(true, ordering: .releasing)
        return error
    }

    /// Tells a replay or a reorder from tampering, on the failure path only.
    private func classify(_ ciphertext: [UInt8], direction: Direction) -> MeshError {
        let expected = direction.cipher.nonce
        guard ciphertext.count >= Sodium.aeadTagLength else {
            return MeshError(
                .decryptFailed,
                "an inbound link message has \(ciphertext.count) bytes, less than the 16-byte tag: corrupted or forged; closing the link"
            )
        }
        guard let key = direction.cipher.key else {
            return MeshError(.cipherFailed, "the link cipher has no key; close the link")
        }
        let window = Self.classificationWindow
        return ciphertext.withUnsafeBufferPointer { buffer in
            let earliest = max(direction.epochStart, expected >= window ? expected - window : 0)
            var candidate = expected
            while candidate > earliest {
                candidate -= 1
                if Sodium.chachaPolyAuthenticates(key: key, counter: candidate, ad: [], ciphertext: buffer) {
                    return MeshError(
                        .replay,
                        "an inbound link message is a replay of message \(candidate) (expected \(expected)); closing the link"
                    )
                }
            }
            let (nextRekey, pastEnd) = (expected / rekeyInterval + 1).multipliedReportingOverflow(by: rekeyInterval)
            let (windowEnd, windowPastEnd) = expected.addingReportingOverflow(window)
            let latest = min(windowPastEnd ? .max : windowEnd, pastEnd ? .max : nextRekey - 1, CipherState.maxNonce - 1)
            candidate = expected
            while candidate < latest {
                candidate += 1
                if Sodium.chachaPolyAuthenticates(key: key, counter: candidate, ad: [], ciphertext: buffer) {
                    return MeshError(
                        .reordered,
                        "an inbound link message is message \(candidate) but \(expected) was expected: messages were reordered or lost; closing the link"
                    )
                }
            }
            return MeshError(
                .decryptFailed,
                "an inbound link message (\(ciphertext.count) bytes) did not authenticate as message \(expected) nor as any of the \(window) before or after it: tampered, corrupted, or replayed/reordered from further away (Noise transport messages carry no explicit nonce, so that cannot be told apart); closing the link"
            )
        }
    }
}
