import MeshCore

/// Noise's HandshakeState (specification rev 34, section 5.3), driven by the tokens of
/// a ``HandshakePattern``, with DH 25519 and ChaChaPoly.
///
/// A value type: copying it forks the handshake (tests use this to feed many
/// candidate messages to the same state). After any failure the state refuses
/// further use.
///
/// ```swift
/// var initiator = try HandshakeState(protocol: .linkProtocol, role: .initiator,
///                                    prologue: Array("SCMesh/1".utf8), localStatic: .generate())
/// let message1 = try initiator.writeMessage()
/// ```
public struct HandshakeState: Sendable {
    /// The largest Noise message (specification section 3).
    public static let maxMessageLength = 65_535
    /// The length of a DH public key.
    public static let dhLength = 32

    /// The protocol being run.
    public let noiseProtocol: NoiseProtocol
    /// This side's role.
    public let role: HandshakeRole
    private var symmetric: SymmetricState
    private let localStatic: X25519KeyPair?
    private var localEphemeral: X25519KeyPair?
    /// The remote's static public key, once known (pre-message or received).
    public private(set) var remoteStatic: [UInt8]?
    /// The remote's ephemeral public key, once received.
    public private(set) var remoteEphemeral: [UInt8]?
    private var preSharedKeys: [[UInt8]]
    private var messageIndex = 0
    private var failed = false
    private var didSplit = false

    /// Initialize(): sets up the handshake and hashes the prologue and pre-messages.
    ///
    /// - Parameters:
    ///   - protocol: the Noise protocol.
    ///   - role: initiator or responder.
    ///   - prologue: bytes both sides must agree on (mixed into the hash).
    ///   - localStatic: this side's static keypair, when the pattern uses one.
    ///   - localEphemeral: a fixed ephemeral keypair; only for test vectors. When nil a
    ///     fresh one is generated at the `e` token.
    ///   - remoteStatic: the remote's static key, when a pre-message needs it.
    ///   - remoteEphemeral: the remote's ephemeral key, when a pre-message needs it.
    ///   - preSharedKeys: 32-byte keys, consumed in order by `psk` tokens.
    /// - Throws: ``MeshCore/MeshError`` `.invalidArgument` when a key the pattern needs
    ///   is missing or has the wrong length.
    public init(
        protocol noiseProtocol: NoiseProtocol,
        role: HandshakeRole,
        prologue: [UInt8] = [],
        localStatic: X25519KeyPair? = nil,
        localEphemeral: X25519KeyPair? = nil,
        remoteStatic: [UInt8]? = nil,
        remoteEphemeral: [UInt8]? = nil,
        preSharedKeys: [[UInt8]] = []
    ) throws {
        self.noiseProtocol = noiseProtocol
        self.role = role
        self.localStatic = localStatic
        self.localEphemeral = localEphemeral
        self.remoteStatic = remoteStatic
        self.remoteEphemeral = remoteEphemeral
        self.preSharedKeys = preSharedKeys
        let pattern = noiseProtocol.pattern
        for key in [remoteStatic, remoteEphemeral].compactMap({ $0 }) where key.count != Self.dhLength {
            throw MeshError(.invalidArgument, "a remote 25519 public key has 32 bytes, got \(key.count)")
        }
        let pskCount = pattern.messages.reduce(0) { $0 + $1.filter { $0 == .psk }.count }
        guard preSharedKeys.count == pskCount, preSharedKeys.allSatisfy({ $0.count == 32 }) else {
            throw MeshError(
                .invalidArgument,
                "\(noiseProtocol) needs \(pskCount) pre-shared keys of 32 bytes, got \(preSharedKeys.map(\.count))"
            )
        }
        let (mine, theirs) =
            role == .initiator
            ? (pattern.initiatorPreMessage, pattern.responderPreMessage)
            : (pattern.responderPreMessage, pattern.initiatorPreMessage)
        let localSends = pattern.messages.enumerated().contains { index, tokens in
            (index % 2 == 0) == (role == .initiator) && tokens.contains(.s)
        }
        if (localSends || mine.contains(.s)) && localStatic == nil {
            throw MeshError(.invalidArgument, "\(noiseProtocol) as \(role) needs a local static key")
        }
        if theirs.contains(.s) && remoteStatic == nil {
            throw MeshError(.invalidArgument, "\(noiseProtocol) as \(role) needs the remote's static key beforehand")
        }
        if mine.contains(.e) && localEphemeral == nil || theirs.contains(.e) && remoteEphemeral == nil {
            throw MeshError(.invalidArgument, "\(noiseProtocol) as \(role) needs pre-message ephemeral keys")
        }

        symmetric = SymmetricState(protocolName: noiseProtocol.name, hash: noiseProtocol.hash)
        symmetric.mixHash(prologue)
        let initiatorPre = role == .initiator ? mine : theirs
        let responderPre = role == .initiator ? theirs : mine
        for (tokens, isLocal) in [(initiatorPre, role == .initiator), (responderPre, role == .responder)] {
            for token in tokens {
                switch (token, isLocal) {
                case (.s, true): symmetric.mixHash(localStatic!.publicKey)
                case (.s, false): symmetric.mixHash(remoteStatic!)
                case (.e, true): symmetric.mixHash(localEphemeral!.publicKey)
                case (.e, false): symmetric.mixHash(remoteEphemeral!)
                default: break
                }
            }
        }
    }

    /// Whether every message of the pattern has been written or read.
    public var isFinished: Bool { messageIndex >= noiseProtocol.pattern.messages.count }

    /// Whether the next message is this side's to write.
    public var isWriteTurn: Bool { !isFinished && (messageIndex % 2 == 0) == (role == .initiator) }

    /// The handshake hash h (channel binding); final once ``isFinished``.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    /// This side's ephemeral public key, once generated.
    public var localEphemeralPublicKey: [UInt8]? { localEphemeral?.publicKey }

    /// WriteMessage(payload): the next handshake message.
    /// - Throws: ``MeshCore/MeshError`` `.malformedHandshake` when it is not this
    ///   side's turn or the handshake failed before; `.invalidArgument` when the message
    ///   would exceed 65,535 bytes; `.invalidKey` on a bad remote key.
    public mutating func writeMessage(payload: [UInt8] = []) throws -> [UInt8] {
        try checkUsable()
        guard isWriteTurn else {
            throw MeshError(
                .malformedHandshake,
                "\(noiseProtocol): it is not the \(role)'s turn to write message \(messageIndex + 1)"
            )
        }
        do {
            var message: [UInt8] = []
            for token in noiseProtocol.pattern.messages[messageIndex] {
                switch token {
                case .e:
                    let ephemeral = localEphemeral ?? X25519KeyPair.generate()
                    localEphemeral = ephemeral
                    message += ephemeral.publicKey
                    symmetric.mixHash(ephemeral.publicKey)
                    if noiseProtocol.pattern.usesPreSharedKeys { symmetric.mixKey(ephemeral.publicKey) }
                case .s:
                    message += try symmetric.encryptAndHash(localStatic!.publicKey)
                case .psk:
                    symmetric.mixKeyAndHash(preSharedKeys.removeFirst())
                case .ee, .es, .se, .ss:
                    try mixDH(token)
                }
            }
            message += try symmetric.encryptAndHash(payload)
            guard message.count <= Self.maxMessageLength else {
                throw MeshError(
                    .invalidArgument,
                    "a Noise message is at most \(Self.maxMessageLength) bytes; this one would be \(message.count) (payload \(payload.count))"
                )
            }
            messageIndex += 1
            return message
        } catch {
            failed = true
            throw error
        }
    }

    /// ReadMessage(message): processes the remote's next handshake message and returns
    /// its payload.
    /// - Throws: ``MeshCore/MeshError`` `.malformedHandshake` for a truncated or
    ///   oversized message or one out of turn, `.decryptFailed` when an encrypted part
    ///   does not authenticate, `.invalidKey` for a low-order public key. The state is
    ///   unusable afterwards.
    public mutating func readMessage(_ message: [UInt8]) throws -> [UInt8] {
        try checkUsable()
        guard !isFinished, !isWriteTurn else {
            throw MeshError(
                .malformedHandshake,
                "\(noiseProtocol): the \(role) did not expect to read message \(messageIndex + 1)"
            )
        }
        do {
            guard message.count <= Self.maxMessageLength else {
                throw MeshError(
                    .malformedHandshake,
                    "handshake message \(messageIndex + 1) has \(message.count) bytes; Noise allows at most \(Self.maxMessageLength)"
                )
            }
            var offset = 0
            func take(_ count: Int, _ what: String) throws -> [UInt8] {
                guard message.count - offset >= count else {
                    throw MeshError(
                        .malformedHandshake,
                        "handshake message \(messageIndex + 1) is truncated: \(message.count) bytes end inside \(what) (needs \(count) more at offset \(offset))"
                    )
                }
                defer { offset += count }
                return Array(message[offset..<(offset + count)])
            }
            for token in noiseProtocol.pattern.messages[messageIndex] {
                switch token {
                case .e:
                    let ephemeral = try take(Self.dhLength, "the ephemeral key")
                    remoteEphemeral = ephemeral
                    symmetric.mixHash(ephemeral)
                    if noiseProtocol.pattern.usesPreSharedKeys { symmetric.mixKey(ephemeral) }
                case .s:
                    let length = Self.dhLength + (symmetric.cipher.hasKey ? Sodium.aeadTagLength : 0)
                    let encrypted = try take(length, "the static key")
                    remoteStatic = try symmetric.decryptAndHash(encrypted)
                case .psk:
                    symmetric.mixKeyAndHash(preSharedKeys.removeFirst())
                case .ee, .es, .se, .ss:
                    try mixDH(token)
                }
            }
            let rest = Array(message[offset...])
            if symmetric.cipher.hasKey && rest.count < Sodium.aeadTagLength {
                throw MeshError(
                    .malformedHandshake,
                    "handshake message \(messageIndex + 1) is truncated: \(rest.count) bytes left for an encrypted payload that needs at least a 16-byte tag"
                )
            }
            let payload = try symmetric.decryptAndHash(rest)
            messageIndex += 1
            return payload
        } catch {
            failed = true
            throw error
        }
    }

    /// Split(): the transport ciphers, once ``isFinished``; the first carries
    /// initiator-to-responder messages, the second responder-to-initiator.
    /// - Throws: ``MeshCore/MeshError`` `.malformedHandshake` before the handshake is
    ///   finished, after a failure, or on a second call.
    public mutating func split() throws -> (initiatorToResponder: CipherState, responderToInitiator: CipherState) {
        try checkUsable()
        guard isFinished, !didSplit else {
            throw MeshError(
                .malformedHandshake,
                "\(noiseProtocol): Split is only possible once, after the last handshake message"
            )
        }
        didSplit = true
        let (first, second) = symmetric.split()
        return (first, second)
    }

    private func checkUsable() throws {
        if failed {
            throw MeshError(.malformedHandshake, "\(noiseProtocol): the handshake failed earlier; start a new one")
        }
    }

    private mutating func mixDH(_ token: HandshakePattern.Token) throws {
        let isInitiator = role == .initiator
        let local: X25519KeyPair?
        let remote: [UInt8]?
        switch token {
        case .ee: (local, remote) = (localEphemeral, remoteEphemeral)
        case .ss: (local, remote) = (localStatic, remoteStatic)
        case .es: (local, remote) = isInitiator ? (localEphemeral, remoteStatic) : (localStatic, remoteEphemeral)
        case .se: (local, remote) = isInitiator ? (localStatic, remoteEphemeral) : (localEphemeral, remoteStatic)
        default: return
        }
        guard let local, let remote else {
            throw MeshError(
                .malformedHandshake,
                "\(noiseProtocol): token \(token.rawValue) needs a key this side does not have"
            )
        }
        let shared = try local.sharedSecret(with: remote)
        var bytes = shared.bytes
        symmetric.mixKey(bytes)
        Sodium.wipe(&bytes)
    }
}
