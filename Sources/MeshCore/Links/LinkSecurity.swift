/// The wire protocol version this release speaks (docs/PROTOCOL.md §A.11): the version
/// byte of the handshake's identity proof and the first byte of every router frame.
public let wireProtocolVersion: UInt8 = 1

/// Which side of a link handshake this node plays: the dialer initiates.
public enum HandshakeRole: Sendable, Hashable {
    /// The side that dialled the link; it sends the first handshake message.
    case initiator
    /// The side that accepted the link.
    case responder
}

/// Whole handshake messages over a link, already reassembled from packets.
public protocol HandshakeChannel: Sendable {
    /// Sends one handshake message (at most 65,535 bytes).
    func send(_ message: [UInt8]) async throws
    /// Receives the next handshake message.
    /// - Throws: `.linkClosed` when the link ends first.
    func receive() async throws -> [UInt8]
}

/// Facts about the link a handshake runs on.
public struct HandshakeContext: Sendable {
    /// The transport's name.
    public var transportName: String
    /// The remote's transport address.
    public var remoteAddress: String
    /// The peer the dialler expects, when discovery told it (an impostor check).
    public var expectedPeer: PeerID?
    /// The optional features this node announces in the handshake (its `features:`).
    public var capabilities: Capabilities
    /// The name this node claims in the handshake (its `node.name`, checked by
    /// ``PeerNames/announceable(_:)``); nil sends none.
    public var localName: String?

    /// Creates a context.
    public init(
        transportName: String,
        remoteAddress: String,
        expectedPeer: PeerID? = nil,
        capabilities: Capabilities = .all,
        localName: String? = nil
    ) {
        self.transportName = transportName
        self.remoteAddress = remoteAddress
        self.expectedPeer = expectedPeer
        self.capabilities = capabilities
        self.localName = localName
    }
}

/// Seals and opens the frames of one authenticated link.
///
/// ``seal(_:)`` is called by one task at a time and ``open(_:)`` by one task at a
/// time (they may run concurrently with each other), in link order.
public protocol SessionCipher: Sendable {
    /// Bytes the cipher adds to every frame (16 for ChaCha20-Poly1305).
    var overhead: Int { get }
    /// Encrypts one outbound frame.
    func seal(_ plaintext: [UInt8]) throws -> [UInt8]
    /// Decrypts one inbound frame.
    /// - Throws: when the frame is forged, replayed or out of order; the core closes
    ///   the link.
    func open(_ ciphertext: [UInt8]) throws -> [UInt8]
}

/// The outcome of a successful handshake.
public struct SecureSession: Sendable {
    /// The remote's proven identity.
    public var remotePeerID: PeerID
    /// The cipher for the rest of the link's life.
    public var cipher: any SessionCipher
    /// The wire protocol version the remote speaks.
    public var remoteVersion: UInt8
    /// The optional features the remote announced; the router sends it no frame of a
    /// feature outside this set (docs/PROTOCOL.md §A.11).
    public var remoteCapabilities: Capabilities
    /// The name the remote claimed (its `node.name`), already checked by
    /// ``PeerNames/validated(_:)``; nil when it sent none or an invalid one.
    public var remoteName: String?

    /// Creates a session. A link security that carries no capabilities leaves
    /// `remoteCapabilities` at ``Capabilities/all``: both ends run the same code.
    public init(
        remotePeerID: PeerID,
        cipher: any SessionCipher,
        remoteVersion: UInt8 = wireProtocolVersion,
        remoteCapabilities: Capabilities = .all,
        remoteName: String? = nil
    ) {
        self.remotePeerID = remotePeerID
        self.cipher = cipher
        self.remoteVersion = remoteVersion
        self.remoteCapabilities = remoteCapabilities
        self.remoteName = remoteName
    }
}

/// Authenticates a new link and yields its cipher. The core runs it on every link of
/// every transport before the router uses the link.
///
/// `MeshCrypto` provides the Noise XX implementation; ``PlaintextLinkSecurity`` is
/// the placeholder that only exchanges peer IDs.
public protocol LinkSecurity: Sendable {
    /// The local node's peer ID.
    var localPeerID: PeerID { get }
    /// Runs the handshake.
    /// - Throws: ``MeshError`` `.handshakeFailed` saying what the remote got wrong.
    func handshake(
        role: HandshakeRole,
        channel: any HandshakeChannel,
        context: HandshakeContext
    ) async throws -> SecureSession
}

/// The placeholder link security: each side sends `"SCM0"`, the protocol version
/// byte, its 32-byte peer ID and its capabilities (u16, big-endian; a 37-byte hello
/// without them counts as ``Capabilities/all``), and frames travel in clear. It proves
/// nothing and encrypts nothing; `MeshCrypto`'s Noise XX replaces it in a real node.
public struct PlaintextLinkSecurity: LinkSecurity {
    public let localPeerID: PeerID

    /// Creates the placeholder for a node.
    public init(localPeerID: PeerID) {
        self.localPeerID = localPeerID
    }

    static let magic: [UInt8] = Array("SCM0".utf8)

    public func handshake(
        role: HandshakeRole,
        channel: any HandshakeChannel,
        context: HandshakeContext
    ) async throws -> SecureSession {
        let features = context.capabilities.rawValue
        let hello = Self.magic + [Frame.version] + localPeerID.bytes + [UInt8(features >> 8), UInt8(features & 0xFF)]
        let remote: [UInt8]
        switch role {
        case .initiator:
            try await channel.send(hello)
            remote = try await channel.receive()
        case .responder:
            remote = try await channel.receive()
            try await channel.send(hello)
        }
        guard remote.count == 37 || remote.count == 39, Array(remote[0..<4]) == Self.magic else {
            throw MeshError(
                .handshakeFailed,
                "hello from \(context.remoteAddress) is not an SCMesh hello (\(remote.count) bytes)"
            )
        }
        guard remote[4] == Frame.version else {
            throw MeshError(
                .handshakeFailed,
                Capabilities.versionMismatch(remote: remote[4], at: context.remoteAddress)
            )
        }
        let peer = try PeerID(bytes: remote[5..<37])
        if let expected = context.expectedPeer, expected != peer {
            throw MeshError(
                .handshakeFailed,
                "peer at \(context.remoteAddress) claims \(peer.short), expected \(expected.short)"
            )
        }
        let capabilities =
            remote.count == 39 ? Capabilities(rawValue: UInt16(remote[37]) << 8 | UInt16(remote[38])) : .all
        return SecureSession(
            remotePeerID: peer,
            cipher: PlaintextCipher(),
            remoteVersion: remote[4],
            remoteCapabilities: capabilities
        )
    }
}

/// The identity cipher used by ``PlaintextLinkSecurity``.
public struct PlaintextCipher: SessionCipher {
    /// Creates the identity cipher.
    public init() {}
    public var overhead: Int { 0 }
    public func seal(_ plaintext: [UInt8]) throws -> [UInt8] { plaintext }
    public func open(_ ciphertext: [UInt8]) throws -> [UInt8] { ciphertext }
}
