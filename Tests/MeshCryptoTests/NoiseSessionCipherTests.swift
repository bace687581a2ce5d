import MeshCore
import Testing

@testable import MeshCrypto

/// The link cipher: Noise transport messages, rekeying, and how it fails.
@Suite("Noise session cipher")
struct NoiseSessionCipherTests {
    /// Two ends of one link with the given rekey interval.
    static func pair(
        rekeyInterval: UInt64 = NoiseSessionCipher.defaultRekeyInterval
    ) -> (NoiseSessionCipher, NoiseSessionCipher) {
        let forward = Sodium.randomBytes(32)
        let backward = Sodium.randomBytes(32)
        return (
            NoiseSessionCipher(
                send: CipherState(key: forward),
                receive: CipherState(key: backward),
                rekeyInterval: rekeyInterval
            ),
            NoiseSessionCipher(
                send: CipherState(key: backward),
                receive: CipherState(key: forward),
                rekeyInterval: rekeyInterval
            )
        )
    }

    @Test("frames round-trip in both directions; the transport format is plain Noise")
    func roundTrip() throws {
        let key = Sodium.randomBytes(32)
        let sender = NoiseSessionCipher(send: CipherState(key: key), receive: CipherState())
        var reference = CipherState(key: key)
        for index in 0..<10 {
            let frame = Sodium.randomBytes(index * 100)
            #expect(
                try sender.seal(frame) == (try reference.encrypt(plaintext: frame)),
                "message \(index) is EncryptWithAd(empty, frame)"
            )
        }
        let (a, b) = Self.pair()
        for index in 0..<50 {
            let frame = Sodium.randomBytes(index)
            #expect(try b.open(try a.seal(frame)) == frame)
            #expect(try a.open(try b.seal(frame)) == frame)
        }
    }

    @Test("frames above 65,519 bytes are refused without poisoning the cipher")
    func tooLarge() throws {
        let (a, b) = Self.pair()
        let error = #expect(throws: MeshError.self) {
            try a.seal([UInt8](repeating: 0, count: NoiseSessionCipher.maxPlaintextLength + 1))
        }
        #expect(error?.code == .frameTooLarge)
        #expect(try b.open(try a.seal([1])) == [1])
        let oversized = #expect(throws: MeshError.self) { try b.open([UInt8](repeating: 0, count: 65_536)) }
        #expect(oversized?.code == .frameTooLarge)
        #expect(b.hasFailed, "an oversized inbound message closes the link")
    }

    @Test("a replayed message is reported as a replay; the cipher then refuses further use")
    func replay() throws {
        let (a, b) = Self.pair()
        let first = try a.seal([1])
        let second = try a.seal([2])
        #expect(try b.open(first) == [1])
        #expect(try b.open(second) == [2])
        let error = #expect(throws: MeshError.self) { try b.open(first) }
        #expect(error?.code == .replay)
        #expect(b.hasFailed)
        let after = #expect(throws: MeshError.self) { try b.open(try a.seal([3])) }
        #expect(after?.code == .cipherFailed)
        let sealAfter = #expect(throws: MeshError.self) { try b.seal([4]) }
        #expect(sealAfter?.code == .cipherFailed)
    }

    @Test("a reordered (or skipped-ahead) message is reported as reordered")
    func reorder() throws {
        let (a, b) = Self.pair()
        let first = try a.seal([1])
        let second = try a.seal([2])
        let error = #expect(throws: MeshError.self) { try b.open(second) }
        #expect(error?.code == .reordered)
        #expect((try? b.open(first)) == nil, "the cipher is dead after the failure")
    }

    @Test("a tampered message is reported as decryptFailed", arguments: [0, 7, 20])
    func tamper(byte: Int) throws {
        let (a, b) = Self.pair()
        var message = try a.seal([UInt8](repeating: 9, count: 5))
        message[byte] ^= 0x40
        let error = #expect(throws: MeshError.self) { try b.open(message) }
        #expect(error?.code == .decryptFailed)
        #expect(error?.message.contains("no explicit nonce") == true, "the message is honest about replay vs tamper")
    }

    @Test("a message shorter than the tag is decryptFailed")
    func truncated() throws {
        let (_, b) = Self.pair()
        let error = #expect(throws: MeshError.self) { try b.open([1, 2, 3]) }
        #expect(error?.code == .decryptFailed)
    }

    @Test("rekeying every N messages: both sides follow, and the key really changes")
    func rekeys() throws {
        let key = Sodium.randomBytes(32)
        let sender = NoiseSessionCipher(send: CipherState(key: key), receive: CipherState(), rekeyInterval: 3)
        let receiver = NoiseSessionCipher(send: CipherState(), receive: CipherState(key: key), rekeyInterval: 3)
        var manual = CipherState(key: key)
        var withoutRekey = CipherState(key: key)
        for index in 0..<10 {
            let frame: [UInt8] = [UInt8(index), 1, 2]
            let sealed = try sender.seal(frame)
            #expect(sealed == (try manual.encrypt(plaintext: frame)))
            let unrekeyed = try withoutRekey.encrypt(plaintext: frame)
            #expect((sealed == unrekeyed) == (index < 3), "message \(index)")
            if manual.nonce % 3 == 0 { manual.rekey() }
            #expect(try receiver.open(sealed) == frame)
        }
    }

    @Test("a replay from before a rekey cannot be classified and is decryptFailed")
    func replayAcrossRekey() throws {
        let (a, b) = Self.pair(rekeyInterval: 2)
        let old = try a.seal([0])
        #expect(try b.open(old) == [0])
        for index in 1..<4 { #expect(try b.open(try a.seal([UInt8(index)])) == [UInt8(index)]) }
        let error = #expect(throws: MeshError.self) { try b.open(old) }
        #expect(error?.code == .decryptFailed)
    }

    @Test("seal and open run concurrently on one cipher")
    func concurrent() async throws {
        let (a, b) = Self.pair(rekeyInterval: 64)
        let count = 2_000
        let toB = (0..<count).map { try! a.seal([UInt8(truncatingIfNeeded: $0)]) }
        async let received: Int = {
            var opened = 0
            for (index, message) in toB.enumerated() where try b.open(message) == [UInt8(truncatingIfNeeded: index)] {
                opened += 1
            }
            return opened
        }()
        async let sent: [[UInt8]] = (0..<count).map { try b.seal([UInt8(truncatingIfNeeded: $0)]) }
        #expect(try await received == count)
        let replies = try await sent
        for (index, reply) in replies.enumerated() {
            #expect(try a.open(reply) == [UInt8(truncatingIfNeeded: index)])
        }
    }
}
