import MeshCore
import Testing

@testable import MeshCrypto

/// The published Noise vectors (cacophony), byte for byte: every handshake message,
/// the handshake hash, and the transport messages after Split.
@Suite("Noise test vectors")
struct NoiseVectorTests {
    static let vectors: [NoiseVector] = (try? NoiseVector.all()) ?? []

    @Test("the fixture holds the required protocols and this implementation supports them all")
    func fixtureCoverage() throws {
        let names = Set(Self.vectors.map(\.protocol_name))
        for required in [
            "Noise_XX_25519_ChaChaPoly_SHA256", "Noise_XX_25519_ChaChaPoly_BLAKE2b",
            "Noise_NN_25519_ChaChaPoly_SHA256", "Noise_NN_25519_ChaChaPoly_BLAKE2b",
            "Noise_X_25519_ChaChaPoly_SHA256", "Noise_X_25519_ChaChaPoly_BLAKE2b",
        ] {
            #expect(names.contains(required), "fixture lacks \(required)")
        }
        for name in names {
            #expect(NoiseProtocol(name: name) != nil, "unsupported protocol in fixture: \(name)")
        }
    }

    @Test("vector matches byte for byte", arguments: vectors)
    func vector(_ vector: NoiseVector) throws {
        let noiseProtocol = try #require(NoiseProtocol(name: vector.protocol_name))
        var initiator = try HandshakeState(
            protocol: noiseProtocol,
            role: .initiator,
            prologue: hex(vector.init_prologue),
            localStatic: vector.init_static.map { X25519KeyPair(privateKey: hex($0)) },
            localEphemeral: X25519KeyPair(privateKey: hex(vector.init_ephemeral)),
            remoteStatic: vector.init_remote_static.map(hex),
            preSharedKeys: (vector.init_psks ?? []).map(hex)
        )
        var responder = try HandshakeState(
            protocol: noiseProtocol,
            role: .responder,
            prologue: hex(vector.resp_prologue),
            localStatic: vector.resp_static.map { X25519KeyPair(privateKey: hex($0)) },
            localEphemeral: vector.resp_ephemeral.map { X25519KeyPair(privateKey: hex($0)) },
            remoteStatic: vector.resp_remote_static.map(hex),
            preSharedKeys: (vector.resp_psks ?? []).map(hex)
        )

        let handshakeLength = noiseProtocol.pattern.messages.count
        #expect(vector.messages.count > handshakeLength, "the vector should include transport messages")
        var transport:
            (
                initiatorSend: CipherState, initiatorReceive: CipherState, responderSend: CipherState,
                responderReceive: CipherState
            )?

        for (index, message) in vector.messages.enumerated() {
            let payload = hex(message.payload)
            let expected = hex(message.ciphertext)
            if index < handshakeLength {
                let initiatorWrites = noiseProtocol.pattern.isOneWay || index % 2 == 0
                let ciphertext =
                    initiatorWrites
                    ? try initiator.writeMessage(payload: payload)
                    : try responder.writeMessage(payload: payload)
                #expect(Hex.encode(ciphertext) == message.ciphertext, "handshake message \(index)")
                let read =
                    initiatorWrites
                    ? try responder.readMessage(expected)
                    : try initiator.readMessage(expected)
                #expect(read == payload, "handshake payload \(index)")
                if index == handshakeLength - 1 {
                    #expect(initiator.isFinished && responder.isFinished)
                    #expect(Hex.encode(initiator.handshakeHash) == vector.handshake_hash)
                    #expect(Hex.encode(responder.handshakeHash) == vector.handshake_hash)
                    let i = try initiator.split()
                    let r = try responder.split()
                    transport = (
                        i.initiatorToResponder, i.responderToInitiator, r.responderToInitiator, r.initiatorToResponder
                    )
                }
            } else {
                var ciphers = try #require(transport)
                // Two-way patterns alternate directions, continuing the handshake's
                // turn order. One-way patterns (N, K, X) only have the
                // initiator-to-responder cipher, so every transport message of their
                // vectors is the initiator's, with consecutive nonces.
                let initiatorWrites = noiseProtocol.pattern.isOneWay || index % 2 == 0
                if initiatorWrites {
                    let ciphertext = try ciphers.initiatorSend.encrypt(plaintext: payload)
                    #expect(Hex.encode(ciphertext) == message.ciphertext, "transport message \(index)")
                    #expect(try ciphers.responderReceive.decrypt(ciphertext: expected) == payload)
                } else {
                    let ciphertext = try ciphers.responderSend.encrypt(plaintext: payload)
                    #expect(Hex.encode(ciphertext) == message.ciphertext, "transport message \(index)")
                    #expect(try ciphers.initiatorReceive.decrypt(ciphertext: expected) == payload)
                }
                transport = ciphers
            }
        }
    }
}
