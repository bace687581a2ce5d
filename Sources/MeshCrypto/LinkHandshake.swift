import MeshCore

/// The SCMesh link handshake as a state machine without I/O: feed it the remote's
/// messages, send what it returns. ``NoiseLinkSecurity/handshake(role:channel:context:)``
/// drives one over a `HandshakeChannel`; benchmarks and tests drive it directly.
///
/// ```swift
/// var a = try LinkHandshake(security: alice, role: .initiator, context: context)
/// var b = try LinkHandshake(security: bob, role: .responder, context: context)
/// let m1 = try a.start()!                // b.start() returns nil
/// let m2 = try b.receive(m1)!
/// let m3 = try a.receive(m2)!            // a.session is now set
/// _ = try b.receive(m3)                  // b.session is now set
/// ```
///
/// A value type: a copy is an independent fork of the handshake. After a failure it
/// refuses further messages.
public struct LinkHandshake: Sendable {
    /// This side's role.
    public let role: HandshakeRole
    private let security: NoiseLinkSecurity
    private let context: HandshakeContext
    private var state: HandshakeState
    private var remote: PeerID?
    private var remoteProof: IdentityProof?
    private var started = false
    private var failed = false
    /// The authenticated session, once the handshake completed.
    public private(set) var session: SecureSession?

    /// Prepares a handshake for one link.
    /// - Throws: ``MeshCore/MeshError`` `.handshakeFailed` if Noise cannot be set up.
    public init(security: NoiseLinkSecurity, role: HandshakeRole, context: HandshakeContext) throws {
        self.role = role
        self.security = security
        self.context = context
        let noiseStatic = security.noiseStatic
        state = try Self.step(context, "set up") {
            try HandshakeState(
                protocol: NoiseLinkSecurity.noiseProtocol,
                role: role,
                prologue: NoiseLinkSecurity.prologue,
                localStatic: noiseStatic
            )
        }
    }

    /// Starts the handshake: the initiator's message 1, or nil for the responder.
    /// - Throws: ``MeshCore/MeshError`` `.handshakeFailed` when called twice.
    public mutating func start() throws -> [UInt8]? {
        guard !started else {
            throw MeshError(
                .handshakeFailed,
                "the link handshake with \(context.remoteAddress) was already started",
                cause: MeshError(.malformedHandshake, "start() called twice")
            )
        }
        started = true
        guard role == .initiator else { return nil }
        return try Self.step(context, "write message 1") { try state.writeMessage() }
    }

    /// Processes the remote's next message; returns the reply to send, if any. When
    /// it returns, ``session`` is set if the handshake is complete.
    /// - Throws: ``MeshCore/MeshError`` `.handshakeFailed` with a specific cause (see
    ///   ``NoiseLinkSecurity/handshake(role:channel:context:)``).
    public mutating func receive(_ message: [UInt8]) throws -> [UInt8]? {
        if !started {
            guard role == .responder else {
                throw MeshError(
                    .handshakeFailed,
                    "the initiator must call start() and send message 1 before receiving",
                    cause: MeshError(.malformedHandshake, "receive before start")
                )
            }
            started = true
        }
        guard !failed else {
            throw MeshError(
                .handshakeFailed,
                "the link handshake with \(context.remoteAddress) failed earlier; close the link",
                cause: MeshError(.malformedHandshake, "message after a failure")
            )
        }
        guard session == nil else {
            throw MeshError(
                .handshakeFailed,
                "the link handshake with \(context.remoteAddress) is complete; an extra message arrived",
                cause: MeshError(.malformedHandshake, "message after the handshake completed")
            )
        }
        do {
            return try process(message)
        } catch {
            failed = true
            throw error
        }
    }

    private mutating func process(_ message: [UInt8]) throws -> [UInt8]? {
        let context = context
        var ownProof = security.proof
        ownProof.capabilities = context.capabilities.rawValue
        ownProof.name = PeerNames.announceable(context.localName)
        let proof = ownProof.encoded
        switch role {
        case .initiator:
            (remote, remoteProof) = try Self.step(context, "read message 2") {
                try Self.readProof(message, into: &state, context: context)
            }
            let message3 = try Self.step(context, "write message 3") { try state.writeMessage(payload: proof) }
            try finish()
            return message3
        case .responder:
            if state.remoteEphemeral == nil {
                try Self.step(context, "read message 1") { try Self.readFirst(message, into: &state) }
                return try Self.step(context, "write message 2") { try state.writeMessage(payload: proof) }
            }
            (remote, remoteProof) = try Self.step(context, "read message 3") {
                try Self.readProof(message, into: &state, context: context)
            }
            try finish()
            return nil
        }
    }

    private mutating func finish() throws {
        let ciphers = try Self.step(context, "split") { try state.split() }
        let interval = security.configuration.rekeyInterval
        let cipher =
            role == .initiator
            ? NoiseSessionCipher(
                send: ciphers.initiatorToResponder,
                receive: ciphers.responderToInitiator,
                rekeyInterval: interval
            )
            : NoiseSessionCipher(
                send: ciphers.responderToInitiator,
                receive: ciphers.initiatorToResponder,
                rekeyInterval: interval
            )
        if let remote, let remoteProof {
            session = SecureSession(
                remotePeerID: remote,
                cipher: cipher,
                remoteVersion: remoteProof.version,
                remoteCapabilities: Capabilities(rawValue: remoteProof.capabilities),
                remoteName: remoteProof.name
            )
        }
    }

    /// The handshake hash (channel binding), final once ``session`` is set.
    public var handshakeHash: [UInt8] { state.handshakeHash }

    /// Reads XX message 1 as the responder: exactly the 32-byte ephemeral key, empty payload.
    static func readFirst(_ message: [UInt8], into state: inout HandshakeState) throws {
        guard message.count == HandshakeState.dhLength else {
            throw MeshError(
                .malformedHandshake,
                "handshake message 1 has \(message.count) bytes; SCMesh's XX message 1 is exactly the 32-byte ephemeral key (empty payload)"
            )
        }
        _ = try state.readMessage(message)
    }

    /// Reads XX message 2 (initiator) or 3 (responder): the remote's static key and
    /// identity proof; returns the proven peer ID and the proof (its version and capabilities).
    static func readProof(
        _ message: [UInt8],
        into state: inout HandshakeState,
        context: HandshakeContext
    ) throws -> (PeerID, IdentityProof) {
        let payload = try state.readMessage(message)
        guard let remoteStatic = state.remoteStatic else {
            throw MeshError(.malformedHandshake, "the handshake ended without the remote's static key")
        }
        let proof = try IdentityProof.parse(payload)
        let peer = try proof.verify(noiseStatic: remoteStatic, address: context.remoteAddress)
        if let expected = context.expectedPeer, expected != peer {
            throw MeshError(
                .peerMismatch,
                "the peer at \(context.remoteAddress) proved identity \(peer.short), but \(expected.short) was expected there"
            )
        }
        return (peer, proof)
    }

    /// Runs one Noise step, turning its failure into `.handshakeFailed`.
    private static func step<T>(_ context: HandshakeContext, _ what: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as MeshError {
            throw MeshError(
                .handshakeFailed,
                "Noise XX handshake with \(context.remoteAddress) over \(context.transportName) failed to \(what): \(error.message)",
                cause: error
            )
        }
    }
}
