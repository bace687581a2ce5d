import MeshCore

extension MeshError.Code {
    /// An envelope was signed by a node other than the frame's origin.
    public static let senderMismatch = MeshError.Code("senderMismatch")
}

/// Seals every message the router sends in an ``Envelope`` to its recipient, and
/// opens every message it receives, checking the envelope's signer is the frame's
/// origin.
///
/// ```swift
/// let identity = try NodeIdentity.loadOrCreate(directory: dataDir)
/// let router = Router(security: NoiseLinkSecurity(identity: identity),
///                     sealer: EnvelopeSealer(identity: identity), logger: logger)
/// ```
public struct EnvelopeSealer: MessageSealer {
    /// The node's identity (signs outgoing, opens incoming).
    public let identity: NodeIdentity

    /// Creates a sealer for a node.
    public init(identity: NodeIdentity) {
        self.identity = identity
    }

    public var overhead: Int { Envelope.overhead }

    public func seal(_ payload: [UInt8], to recipient: PeerID) throws -> [UInt8] {
        try Envelope.seal(payload, to: recipient, from: identity)
    }

    public func open(_ sealed: [UInt8], from origin: PeerID) throws -> [UInt8] {
        let (sender, payload) = try Envelope.open(sealed, as: identity)
        guard sender == origin else {
            throw MeshError(.senderMismatch, "message from \(origin.short) carries an envelope signed by \(sender.short); dropped")
        }
        return payload
    }
}
