/// Seals message payloads end to end, so relays see only the frame header.
///
/// The router seals a payload once, before chunking, and opens it once, after
/// reassembly; relays forward the sealed bytes unchanged. MeshCrypto's
/// `EnvelopeSealer` is the implementation a node uses.
public protocol MessageSealer: Sendable {
    /// Bytes sealing adds to a payload (the most any format adds).
    var overhead: Int { get }
    /// Seals `payload` so that only `recipient` can read it and anyone can check it
    /// came from this node.
    func seal(_ payload: [UInt8], to recipient: PeerID) throws -> [UInt8]
    /// Opens a sealed payload that arrived from `origin`.
    /// - Throws: when it was not sealed for this node, not signed by `origin`, or
    ///   was changed on the way. The router drops such a message and counts it.
    func open(_ sealed: [UInt8], from origin: PeerID) throws -> [UInt8]
    /// Seals `payload` bound to the DATA frame fields a relay could change: the
    /// message ID and the end-to-end flags (docs/PROTOCOL.md §B.3, format 2).
    func seal(_ payload: [UInt8], to recipient: PeerID, binding: SealBinding) throws -> [UInt8]
    /// Opens a sealed payload that arrived from `origin` in a frame with `binding`'s
    /// ID and flags.
    /// - Throws: as ``open(_:from:)``, and when the envelope binds another message ID
    ///   or other flags than the frame carries.
    func open(_ sealed: [UInt8], from origin: PeerID, binding: SealBinding) throws -> [UInt8]
    /// Checks, without opening it, that a sealed payload relayed in a frame with
    /// `binding`'s ID and flags was signed by `origin` for that frame (what a relay
    /// does before it spends an origin's budget on it).
    /// - Throws: when it was not signed by `origin`, or binds another ID or flags.
    func verify(_ sealed: [UInt8], from origin: PeerID, binding: SealBinding) throws
    /// Whether this sealer has two formats, one that binds the frame (format 2) and
    /// one that does not (format 1); the router applies the format rules of
    /// docs/PROTOCOL.md §B.3 only to such a sealer's envelopes.
    var bindsFrames: Bool { get }
    /// Whether `sealed` is of a format that binds the frame (format 2), by its format
    /// alone, before any check: the router refuses an unbound envelope from an origin
    /// known to seal bound ones (docs/PROTOCOL.md §B.3).
    func isBound(_ sealed: [UInt8]) -> Bool
    /// When the sender sealed `sealed` (milliseconds since 1970, UTC), when its format
    /// says (format 2); nil otherwise. Read only after the envelope opened.
    func sealedAtMillis(_ sealed: [UInt8]) -> UInt64?
}

extension MessageSealer {
    /// A sealer that binds nothing seals as ``seal(_:to:)``.
    public func seal(_ payload: [UInt8], to recipient: PeerID, binding: SealBinding) throws -> [UInt8] {
        try seal(payload, to: recipient)
    }

    /// A sealer that binds nothing opens as ``open(_:from:)``.
    public func open(_ sealed: [UInt8], from origin: PeerID, binding: SealBinding) throws -> [UInt8] {
        try open(sealed, from: origin)
    }

    /// A sealer that binds nothing has nothing a relay could check.
    public func verify(_ sealed: [UInt8], from origin: PeerID, binding: SealBinding) throws {}

    /// A sealer that binds nothing has one format.
    public var bindsFrames: Bool { false }

    /// A sealer that binds nothing makes no bound envelopes.
    public func isBound(_ sealed: [UInt8]) -> Bool { false }

    /// A sealer that binds nothing records no creation time.
    public func sealedAtMillis(_ sealed: [UInt8]) -> UInt64? { nil }
}

/// What a sealed envelope binds of the DATA frame that carries it: the message ID and
/// the end-to-end flags, so a relay can neither deliver it again under a fresh ID
/// nor turn it into a receipt or an emergency (docs/PROTOCOL.md §B.3).
public struct SealBinding: Sendable, Hashable {
    /// The DATA flags an envelope binds: receipt (`0x0002`) and emergency (`0x0008`).
    /// Sealed (`0x0001`) is implied, and flood (`0x0004`) is a routing choice relays
    /// may clear (§A.11).
    public static let boundFlags: UInt16 = DataFrame.receiptFlag | DataFrame.emergencyFlag

    /// The message ID.
    public var messageID: MessageID
    /// The bound flags (others are cleared).
    public var flags: UInt16

    /// Creates a binding; flags outside ``boundFlags`` are dropped.
    public init(messageID: MessageID, flags: UInt16) {
        self.messageID = messageID
        self.flags = flags & Self.boundFlags
    }

    /// Whether a frame with `frame`'s ID and flags may carry an envelope that binds
    /// `self`: the same ID and receipt flag, and no emergency the envelope did not
    /// bind (a relay may clear the emergency flag, §A.11, never set it).
    public func admits(_ frame: SealBinding) -> Bool {
        frame.messageID == messageID && frame.flags & DataFrame.receiptFlag == flags & DataFrame.receiptFlag
            && frame.flags & ~flags & DataFrame.emergencyFlag == 0
    }
}
