import MeshCore
import MeshCrypto
import MeshTesting

/// A peer of the minimal profile (docs/PROTOCOL.md §A.11) written the way an
/// independent implementation would: MeshTesting's raw peer for the packets, the Noise
/// XX handshake announcing no capability, then DATA, ACK, PING and PONG only. It
/// acknowledges every DATA frame, answers every PING, and records the type of every
/// frame it receives.
struct MinimalPeer {
    private var raw: RawPeer
    private let cipher: any SessionCipher
    /// This peer's identity.
    let id: PeerID
    /// The node's peer ID, as the handshake proved it.
    let remote: PeerID
    /// The capabilities the node announced.
    let remoteCapabilities: Capabilities
    /// Every frame type received, by raw type code.
    private(set) var receivedTypes: [UInt8] = []
    /// PINGs answered.
    private(set) var pingsAnswered = 0
    /// DATA frames received, in order.
    private(set) var data: [DataFrame] = []
    private var nextSequence: UInt32 = 1
    private var highestReceived: UInt32 = 0

    /// Runs the handshake on `link` in `role`, announcing `capabilities` (none by default).
    static func handshake(
        on link: any Link,
        role: HandshakeRole,
        identity: NodeIdentity = .generate(),
        capabilities: Capabilities = .none
    ) async throws -> MinimalPeer {
        var raw = RawPeer(link: link)
        let context = HandshakeContext(
            transportName: "tcp",
            remoteAddress: link.remoteAddress,
            capabilities: capabilities
        )
        var handshake = try LinkHandshake(security: NoiseLinkSecurity(identity: identity), role: role, context: context)
        if let first = try handshake.start() { try await raw.send(segment: first) }
        while handshake.session == nil {
            guard let message = try await raw.receiveSegment() else {
                throw MeshError(.linkClosed, "the node closed the link during the handshake")
            }
            if let reply = try handshake.receive(message) { try await raw.send(segment: reply) }
        }
        guard let session = handshake.session else {
            throw MeshError(.handshakeFailed, "the handshake ended without a session")
        }
        return MinimalPeer(
            raw: raw,
            cipher: session.cipher,
            id: identity.peerID,
            remote: session.remotePeerID,
            remoteCapabilities: session.remoteCapabilities
        )
    }

    /// Sends one frame's plaintext bytes, encrypted.
    func send(plaintext: [UInt8]) async throws {
        try await raw.send(segment: cipher.seal(plaintext))
    }

    /// Sends one frame.
    func send(_ frame: Frame) async throws {
        try await send(plaintext: frame.encoded())
    }

    /// Sends a one-chunk, unsealed message to the node; returns its hop sequence number.
    @discardableResult
    mutating func sendMessage(_ payload: [UInt8]) async throws -> UInt32 {
        let sequence = nextSequence
        nextSequence += 1
        try await send(
            .data(
                DataFrame.whole(sequence: sequence, origin: id, destination: remote, ttl: 32, payload: payload)
            )
        )
        return sequence
    }

    /// The next frame, after answering it as the minimal profile requires (a PONG for a
    /// PING, an ACK for a DATA frame); nil when the node closed the link.
    mutating func receive() async throws -> Frame? {
        guard let segment = try await raw.receiveSegment() else { return nil }
        let plain = try cipher.open(segment)
        if plain.count >= 2 { receivedTypes.append(plain[1]) }
        guard let frame = try Frame.decodeInbound(plain) else { return try await receive() }
        switch frame {
        case .ping(let nonce):
            pingsAnswered += 1
            try await send(.pong(nonce: nonce))
        case .data(let frame):
            data.append(frame)
            highestReceived = max(highestReceived, frame.sequence)
            try await send(.ack(AckFrame(cumulative: highestReceived)))
        default:
            break
        }
        return frame
    }

    /// Reads (and answers) frames until `match` returns a value; nil when the link closed.
    mutating func next<T>(_ match: (Frame) -> T?) async throws -> T? {
        while let frame = try await receive() {
            if let found = match(frame) { return found }
        }
        return nil
    }

    /// Waits for the node's ACK of `sequence` (answering whatever comes meanwhile).
    mutating func waitForAck(of sequence: UInt32) async throws -> Bool {
        try await next { frame -> Bool? in
            guard case .ack(let ack) = frame else { return nil }
            return ack.cumulative >= sequence || ack.selective.contains(sequence) ? true : nil
        } ?? false
    }

    /// Whether every frame received so far is of the minimal profile.
    var receivedOnlyMinimalFrames: Bool {
        receivedTypes.allSatisfy { [Frame.Kind.data, .ack, .ping, .pong].map(\.rawValue).contains($0) }
    }
}
