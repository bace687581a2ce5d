import MeshCore
import Synchronization

/// The identity beacon in a node's scan response: 10 bytes (the issue allows up to
/// 24; a legacy scan response has room for 13 next to the 128-bit UUID).
///
/// | byte | meaning |
/// | --- | --- |
/// | 0 | version (`0x01`) |
/// | 1 | the L2CAP LE PSM the node listens on (0x80–0xFF) |
/// | 2–9 | the ephemeral identifier of the current time window |
public struct BLEBeacon: Hashable, Sendable {
    /// The beacon format this code writes.
    public static let version: UInt8 = 1
    /// Bytes of the ephemeral identifier.
    public static let identifierLength = 8
    /// Encoded size.
    public static let encodedLength = 2 + identifierLength

    /// The PSM the node listens on.
    public var psm: UInt16
    /// The rotating identifier.
    public var ephemeralID: [UInt8]

    /// Creates a beacon.
    public init(psm: UInt16, ephemeralID: [UInt8]) {
        self.psm = psm
        self.ephemeralID = ephemeralID
    }

    /// Decodes a beacon; extra trailing bytes (a later version's fields) are ignored.
    /// - Throws: `.malformedFrame` for a short input, another version or a PSM outside
    ///   0x80–0xFF.
    public init(decoding bytes: [UInt8]) throws(MeshError) {
        guard bytes.count >= Self.encodedLength else {
            throw MeshError(.malformedFrame, "BLE beacon of \(bytes.count) bytes is shorter than \(Self.encodedLength)")
        }
        guard bytes[0] == Self.version else {
            throw MeshError(.malformedFrame, "BLE beacon version \(bytes[0]) is not \(Self.version)")
        }
        guard bytes[1] >= 0x80 else {
            throw MeshError(.malformedFrame, "BLE beacon PSM 0x\(String(bytes[1], radix: 16)) is outside 0x80–0xFF")
        }
        psm = UInt16(bytes[1])
        ephemeralID = Array(bytes[2..<Self.encodedLength])
    }

    /// The encoded bytes.
    public func encoded() -> [UInt8] {
        [Self.version, UInt8(truncatingIfNeeded: psm)] + ephemeralID
    }
}

/// Derives the rotating ephemeral identifier of a node for each time window, and
/// recognises the identifiers of known peers.
///
/// Construction, for peer ID `P` (32 bytes) and window index `w = ⌊unix time / rotation⌋`:
/// `ephemeralID = H("SCMesh-BLE-beacon-v1" ‖ P ‖ w as 8 bytes big-endian)[0..<8]`, with
/// `H` the hash the node injects (BLAKE2b or SHA-256 from MeshCrypto; this module has
/// no cryptography of its own). A peer that knows `P` recomputes it and recognises the
/// node; an observer that does not know `P` sees unrelated values in each window.
///
/// Without a hash function the identifier is random per window: unlinkable, and
/// recognisable by nobody (peers then learn the ID in the link handshake).
public final class BLEBeaconSchedule: Sendable {
    /// A hash function: any output of at least 8 bytes.
    public typealias Hash = @Sendable ([UInt8]) -> [UInt8]

    static let domain: [UInt8] = Array("SCMesh-BLE-beacon-v1".utf8)

    /// The node this schedule advertises.
    public let localPeerID: PeerID
    /// The window length in seconds.
    public let rotationSeconds: UInt64
    private let hash: Hash?
    private let randomIDs = Mutex<(window: UInt64, id: [UInt8])?>(nil)

    /// Creates a schedule.
    /// - Parameters:
    ///   - localPeerID: the node's peer ID.
    ///   - rotationSeconds: window length (at least 1).
    ///   - hash: the keyed derivation's hash; nil for random identifiers.
    /// - Throws: `.invalidArgument` when `hash` returns fewer than 8 bytes.
    public init(localPeerID: PeerID, rotationSeconds: Int, hash: Hash?) throws(MeshError) {
        self.localPeerID = localPeerID
        self.rotationSeconds = UInt64(max(1, rotationSeconds))
        if let hash {
            let probe = hash(Self.domain).count
            guard probe >= BLEBeacon.identifierLength else {
                throw MeshError(
                    .invalidArgument,
                    "the beacon hash returns \(probe) bytes; it needs at least \(BLEBeacon.identifierLength)"
                )
            }
        }
        self.hash = hash
    }

    /// Whether identifiers are derived (recognisable by peers that know the ID).
    public var isRecognisable: Bool { hash != nil }

    /// The window index containing `unixTime`.
    public func window(at unixTime: UInt64) -> UInt64 { unixTime / rotationSeconds }

    /// Seconds from `unixTime` to the start of the next window.
    public func secondsUntilRotation(at unixTime: UInt64) -> UInt64 {
        rotationSeconds - unixTime % rotationSeconds
    }

    /// The identifier `peer` uses in `window` (derived; needs a hash).
    public func derivedID(of peer: PeerID, window: UInt64) -> [UInt8]? {
        guard let hash else { return nil }
        var input = Self.domain + peer.bytes
        for shift in stride(from: 56, through: 0, by: -8) {
            input.append(UInt8(truncatingIfNeeded: window >> UInt64(shift)))
        }
        return Array(hash(input).prefix(BLEBeacon.identifierLength))
    }

    /// This node's identifier at `unixTime`.
    public func localID(at unixTime: UInt64) -> [UInt8] {
        let current = window(at: unixTime)
        if let derived = derivedID(of: localPeerID, window: current) { return derived }
        return randomIDs.withLock { cached in
            if let cached, cached.window == current { return cached.id }
            var generator = SystemRandomNumberGenerator()
            let id = (0..<BLEBeacon.identifierLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            cached = (current, id)
            return id
        }
    }

    /// The beacon to advertise at `unixTime`.
    public func beacon(psm: UInt16, at unixTime: UInt64) -> BLEBeacon {
        BLEBeacon(psm: psm, ephemeralID: localID(at: unixTime))
    }

    /// Which of `candidates` advertised `ephemeralID` around `unixTime` (the window
    /// before and after count too, for clock skew); nil when none or no hash.
    public func recognise(
        _ ephemeralID: [UInt8],
        among candidates: some Sequence<PeerID>,
        at unixTime: UInt64
    ) -> PeerID? {
        let current = window(at: unixTime)
        let windows = [current, current &- 1, current &+ 1]
        for peer in candidates {
            for window in windows where derivedID(of: peer, window: window) == ephemeralID { return peer }
        }
        return nil
    }
}

/// What discovery has seen: reports a sighting at most once per dedup window (per
/// address and beacon, so a rotated beacon is news), and says which advertisers have
/// not been seen for `lostAfter`.
struct SightingTracker {
    let window: Duration
    let lostAfter: Duration
    private var lastReported: [String: ContinuousClock.Instant] = [:]
    private var lastSeen: [String: (hint: PeerHint, at: ContinuousClock.Instant)] = [:]

    init(window: Duration, lostAfter: Duration) {
        self.window = window
        self.lostAfter = lostAfter
    }

    /// Records a sighting; true when it should be reported.
    mutating func sighted(_ hint: PeerHint, at now: ContinuousClock.Instant) -> Bool {
        lastSeen[hint.address] = (hint, now)
        let key = hint.address + "|" + (hint.metadata["ephemeral_id"] ?? "")
        if let last = lastReported[key], now - last < window { return false }
        lastReported[key] = now
        if lastReported.count > 1024 {
            lastReported = lastReported.filter { now - $0.value < window }
        }
        return true
    }

    /// The advertisers not seen for `lostAfter`, forgotten as they are returned.
    mutating func lost(at now: ContinuousClock.Instant) -> [PeerHint] {
        let gone = lastSeen.filter { now - $0.value.at >= lostAfter }
        for address in gone.keys {
            lastSeen[address] = nil
            lastReported = lastReported.filter { !$0.key.hasPrefix(address + "|") }
        }
        return gone.values.map(\.hint).sorted { $0.address < $1.address }
    }
}
