import MeshCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension MeshError.Code {
    /// An envelope was signed by a node other than the frame's origin.
    public static let senderMismatch = MeshError.Code("senderMismatch")
    /// A format-2 envelope binds another message ID or other flags than the DATA
    /// frame that carries it: a relay replayed or altered it.
    public static let bindingMismatch = MeshError.Code("bindingMismatch")
    /// A format-2 envelope was created longer ago than any message lives, or
    /// further in the future than clocks drift apart: a replay.
    public static let envelopeStale = MeshError.Code("envelopeStale")
}

/// Seals every message the router sends in an ``Envelope`` to its recipient, and
/// opens every message it receives, checking the envelope's signer is the frame's
/// origin and, in format 2, that the envelope binds the frame's message ID and flags
/// and was created recently.
///
/// ```swift
/// let identity = try NodeIdentity.loadOrCreate(directory: dataDir)
/// let router = Router(security: NoiseLinkSecurity(identity: identity),
///                     sealer: EnvelopeSealer(identity: identity), logger: logger)
/// ```
public struct EnvelopeSealer: MessageSealer {
    /// The node's identity (signs outgoing, opens incoming).
    public let identity: NodeIdentity
    /// The oldest a format-2 envelope may be: at least the longest message expiry,
    /// as the receiver's duplicate log keeps IDs for that long.
    public let maxAge: Duration
    /// How far in the future a format-2 envelope's creation time may be (clock skew).
    public let maxSkew: Duration
    /// The wall clock, in milliseconds since 1970 (UTC).
    let now: @Sendable () -> UInt64

    /// Creates a sealer for a node.
    /// - Parameters:
    ///   - maxAge: the oldest envelope opened (default 8 days: the 7-day default
    ///     expiry plus a day of clock skew, as the store's dedup retention).
    ///   - maxSkew: how far ahead of this node's clock a creation time may be.
    ///   - now: the wall clock in milliseconds since 1970 (tests inject one).
    public init(
        identity: NodeIdentity,
        maxAge: Duration = .seconds(8 * 86_400),
        maxSkew: Duration = .seconds(86_400),
        now: @escaping @Sendable () -> UInt64 = EnvelopeSealer.wallClockMillis
    ) {
        self.identity = identity
        self.maxAge = maxAge
        self.maxSkew = maxSkew
        self.now = now
    }

    /// The system's wall clock in milliseconds since 1970 (UTC).
    @Sendable public static func wallClockMillis() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(max(0, spec.tv_sec)) * 1000 + UInt64(max(0, spec.tv_nsec)) / 1_000_000
    }

    public var overhead: Int { Envelope.boundOverhead }

    public func seal(_ payload: [UInt8], to recipient: PeerID) throws -> [UInt8] {
        try Envelope.seal(payload, to: recipient, from: identity)
    }

    public func seal(_ payload: [UInt8], to recipient: PeerID, binding: SealBinding) throws -> [UInt8] {
        try Envelope.seal(payload, to: recipient, from: identity, binding: binding, createdMillis: now())
    }

    public func open(_ sealed: [UInt8], from origin: PeerID) throws -> [UInt8] {
        let (sender, payload) = try Envelope.open(sealed, as: identity)
        try Self.check(sender, is: origin)
        return payload
    }

    public func open(_ sealed: [UInt8], from origin: PeerID, binding: SealBinding) throws -> [UInt8] {
        let (sender, payload) = try Envelope.open(sealed, as: identity)
        try Self.check(sender, is: origin)
        try check(sealed, from: origin, against: binding)
        return payload
    }

    public func verify(_ sealed: [UInt8], from origin: PeerID, binding: SealBinding) throws {
        let (sender, _) = try Envelope.verify(sealed)
        try Self.check(sender, is: origin)
        try check(sealed, from: origin, against: binding)
    }

    public var bindsFrames: Bool { true }

    public func isBound(_ sealed: [UInt8]) -> Bool {
        sealed.first == Envelope.boundVersion
    }

    /// The creation time a format-2 envelope binds; nil for format 1.
    public func sealedAtMillis(_ sealed: [UInt8]) -> UInt64? {
        (try? Envelope.binding(of: sealed))??.createdMillis
    }

    private static func check(_ sender: PeerID, is origin: PeerID) throws {
        guard sender == origin else {
            throw MeshError(
                .senderMismatch,
                "message from \(origin.short) carries an envelope signed by \(sender.short); dropped"
            )
        }
    }

    /// Format 2: the frame's ID and flags are those the envelope binds, and it was
    /// created within the age window. Format 1 binds nothing to check.
    private func check(_ sealed: [UInt8], from origin: PeerID, against frame: SealBinding) throws {
        guard let (bound, created) = try Envelope.binding(of: sealed) else { return }
        guard bound.admits(frame) else {
            throw MeshError(
                .bindingMismatch,
                "envelope from \(origin.short) was sealed for message \(bound.messageID.hex) with flags 0x\(String(bound.flags, radix: 16)) but arrived as \(frame.messageID.hex) with flags 0x\(String(frame.flags, radix: 16)): a relay replayed or altered it; dropped"
            )
        }
        let now = now()
        let (age, skew) = (Self.millis(maxAge), Self.millis(maxSkew))
        guard created <= now &+ skew, now < age || created >= now - age else {
            throw MeshError(
                .envelopeStale,
                "envelope from \(origin.short) for message \(bound.messageID.hex) was created at \(created) ms, outside \(maxAge) before to \(maxSkew) after this node's clock (\(now) ms): a replay, or a clock far off; dropped"
            )
        }
    }

    private static func millis(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1000 + UInt64(max(0, attoseconds)) / 1_000_000_000_000_000
    }
}
