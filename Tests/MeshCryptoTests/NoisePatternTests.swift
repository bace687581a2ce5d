import MeshCore
import Testing

@testable import MeshCrypto

/// The Noise building blocks on their own: HMAC/HKDF, the pattern table, CipherState,
/// and HandshakeState's handling of bad calls.
@Suite("Noise patterns and states")
struct NoisePatternTests {
    @Test("HMAC-SHA256 matches RFC 4231 test case 2")
    func hmacSHA256() {
        let mac = NoiseHash.sha256.hmac(key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("HMAC-SHA256 hashes keys longer than the block (RFC 4231 test case 6)")
    func hmacLongKey() {
        let mac = NoiseHash.sha256.hmac(
            key: [UInt8](repeating: 0xaa, count: 131),
            data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
        )
        #expect(Hex.encode(mac) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test("protocol names parse, and unsupported ones are refused")
    func protocolNames() {
        #expect(NoiseProtocol(name: "Noise_XX_25519_ChaChaPoly_SHA256") == .linkProtocol)
        #expect(NoiseProtocol(name: "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b")?.pattern.messages.last == [.s, .se, .psk])
        #expect(HandshakePattern(name: "NNpsk0+psk2")?.messages == [[.psk, .e], [.e, .ee, .psk]])
        for bad in [
            "Noise_XX_448_ChaChaPoly_SHA256", "Noise_XX_25519_AESGCM_SHA256", "Noise_XX_25519_ChaChaPoly_SHA512",
            "Noise_QQ_25519_ChaChaPoly_SHA256", "Noise_XXpsk9_25519_ChaChaPoly_SHA256",
            "Noise_XXfallback_25519_ChaChaPoly_SHA256",
            "Noise_XX_25519_ChaChaPoly", "", "Noise_XXpsk_25519_ChaChaPoly_SHA256",
        ] {
            #expect(NoiseProtocol(name: bad) == nil, "\(bad) should be refused")
        }
    }

    static let cases: [(HandshakePattern, NoiseHash)] = HandshakePattern.fundamental.flatMap { pattern in
        NoiseHash.allCases.map { (pattern, $0) }
    }

    @Test("every pattern of the table completes and both sides agree", arguments: cases)
    func roundTrip(pattern: HandshakePattern, hash: NoiseHash) throws {
        let noiseProtocol = NoiseProtocol(pattern: pattern, hash: hash)
        let initiatorStatic = X25519KeyPair.generate()
        let responderStatic = X25519KeyPair.generate()
        let prologue = Array("test".utf8)
        var initiator = try HandshakeState(
            protocol: noiseProtocol,
            role: .initiator,
            prologue: prologue,
            localStatic: initiatorStatic,
            remoteStatic: pattern.responderPreMessage.contains(.s) ? responderStatic.publicKey : nil
        )
        var responder = try HandshakeState(
            protocol: noiseProtocol,
            role: .responder,
            prologue: prologue,
            localStatic: responderStatic,
            remoteStatic: pattern.initiatorPreMessage.contains(.s) ? initiatorStatic.publicKey : nil
        )
        var index = 0
        while !initiator.isFinished {
            let payload = Array("message \(index)".utf8)
            if index % 2 == 0 {
                #expect(try responder.readMessage(try initiator.writeMessage(payload: payload)) == payload)
            } else {
                #expect(try initiator.readMessage(try responder.writeMessage(payload: payload)) == payload)
            }
            index += 1
        }
        #expect(responder.isFinished)
        #expect(initiator.handshakeHash == responder.handshakeHash)
        #expect(initiator.handshakeHash.count == hash.hashLength)
        let sendsStatic = pattern.messages.enumerated().contains { $0.offset % 2 == 0 && $0.element.contains(.s) }
        if sendsStatic || pattern.initiatorPreMessage.contains(.s) {
            #expect(responder.remoteStatic == initiatorStatic.publicKey)
        }
        var (i1, i2) = try initiator.split()
        var (r1, r2) = try responder.split()
        let forward = try i1.encrypt(plaintext: [1, 2, 3])
        #expect(try r1.decrypt(ciphertext: forward) == [1, 2, 3])
        let backward = try r2.encrypt(plaintext: [4, 5])
        #expect(try i2.decrypt(ciphertext: backward) == [4, 5])
    }

    @Test("a different prologue makes the handshake fail")
    func prologueMismatch() throws {
        var initiator = try HandshakeState(
            protocol: .linkProtocol,
            role: .initiator,
            prologue: [1],
            localStatic: .generate()
        )
        var responder = try HandshakeState(
            protocol: .linkProtocol,
            role: .responder,
            prologue: [2],
            localStatic: .generate()
        )
        _ = try responder.readMessage(try initiator.writeMessage())
        let error = #expect(throws: MeshError.self) { try initiator.readMessage(try responder.writeMessage()) }
        #expect(error?.code == .decryptFailed)
    }

    @Test("missing keys, wrong turns, oversized messages and reuse after failure are refused")
    func misuse() throws {
        #expect(throws: MeshError.self) { try HandshakeState(protocol: .linkProtocol, role: .initiator) }
        #expect(throws: MeshError.self) {
            try HandshakeState(
                protocol: NoiseProtocol(pattern: .x, hash: .sha256),
                role: .initiator,
                localStatic: .generate()
            )
        }
        #expect(throws: MeshError.self) {
            try HandshakeState(
                protocol: NoiseProtocol(name: "Noise_XXpsk3_25519_ChaChaPoly_SHA256")!,
                role: .initiator,
                localStatic: .generate()
            )
        }
        var initiator = try HandshakeState(protocol: .linkProtocol, role: .initiator, localStatic: .generate())
        var responder = try HandshakeState(protocol: .linkProtocol, role: .responder, localStatic: .generate())
        #expect((try? responder.writeMessage()) == nil, "the responder does not write first")
        #expect((try? initiator.writeMessage(payload: [UInt8](repeating: 0, count: 65_535))) == nil)

        var fresh = try HandshakeState(protocol: .linkProtocol, role: .initiator, localStatic: .generate())
        #expect((try? fresh.readMessage([])) == nil, "the initiator reads nothing before writing")
        let message1 = try fresh.writeMessage()
        #expect((try? fresh.split()) == nil, "no split before the end")
        var oversized = try HandshakeState(protocol: .linkProtocol, role: .responder, localStatic: .generate())
        let error = #expect(throws: MeshError.self) {
            try oversized.readMessage(message1 + [UInt8](repeating: 0, count: 65_535))
        }
        #expect(error?.code == .malformedHandshake)
        #expect((try? oversized.readMessage(message1)) == nil, "a failed state refuses further use")
    }

    @Test("CipherState rekey changes the key on both sides alike and keeps the nonce")
    func rekey() throws {
        let key = Sodium.randomBytes(32)
        var sender = CipherState(key: key)
        var receiver = CipherState(key: key)
        var plain = CipherState(key: key)
        _ = try plain.encrypt(plaintext: [1])
        _ = try receiver.decrypt(ciphertext: try sender.encrypt(plaintext: [1]))
        sender.rekey()
        receiver.rekey()
        #expect(sender.nonce == 1 && receiver.nonce == 1)
        let rekeyed = try sender.encrypt(plaintext: [7, 7, 7])
        #expect(rekeyed != (try plain.encrypt(plaintext: [7, 7, 7])))
        #expect(try receiver.decrypt(ciphertext: rekeyed) == [7, 7, 7])
    }

    @Test("CipherState refuses the reserved nonce 2^64 - 1, and a failed decrypt keeps the nonce")
    func nonceLimits() throws {
        var cipher = CipherState(key: Sodium.randomBytes(32))
        cipher.nonce = CipherState.maxNonce
        let error = #expect(throws: MeshError.self) { try cipher.encrypt(plaintext: [1]) }
        #expect(error?.code == .cipherFailed)
        var receiver = CipherState(key: Sodium.randomBytes(32))
        #expect(throws: MeshError.self) { try receiver.decrypt(ciphertext: [UInt8](repeating: 0, count: 20)) }
        #expect(receiver.nonce == 0)
        #expect(throws: MeshError.self) { try receiver.decrypt(ciphertext: [1, 2, 3]) }
        var keyless = CipherState()
        #expect(try keyless.encrypt(plaintext: [9]) == [9])
    }
}
