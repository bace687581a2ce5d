import MeshCore
import Synchronization

/// Counts what crosses the simulated links, by kind, as the link saw it (packets
/// written, including those the simulated loss then dropped): announcements, message
/// DATA frames, receipt DATA frames, topic messages, topic control frames, and
/// everything else (handshakes, ACKs, pings, address records).
/// Its ``activity`` counter moves on every packet written or read, which is how the
/// simulation driver tells that the network has gone quiet.
public final class WireTally: Sendable {
    /// The routing frame types counted apart inside ``Kind/announce``.
    public enum RoutingFrame: Int, Sendable, CaseIterable {
        /// ANNOUNCE.
        case announce
        /// ROUTE REQUEST.
        case request
        /// ROUTE SUMMARY.
        case summary
        /// ROUTE LISTING.
        case listing
        /// ROUTE HOPS.
        case hops
    }

    /// What one packet carried.
    public enum Kind: Int, Sendable, CaseIterable {
        /// A route announcement (ANNOUNCE frame).
        case announce
        /// A DATA frame of a message.
        case message
        /// A DATA frame of a delivery receipt.
        case receipt
        /// Handshakes, ACKs, pings, pongs and address records.
        case other
        /// A topic message (TOPIC_MESSAGE frame: a push, an IWANT answer, a publication).
        case topicMessage
        /// A topic control frame (SUBSCRIBE, UNSUBSCRIBE, GRAFT, PRUNE, IHAVE, IWANT).
        case topicControl
    }

    /// Packets and bytes of each kind, and the packets the simulated loss dropped.
    public struct Snapshot: Sendable, Hashable {
        /// Packets written, by ``Kind`` raw value.
        public var packets: [Int]
        /// Bytes written, by ``Kind`` raw value.
        public var bytes: [Int]
        /// Frames sent, by ``Kind`` raw value: packets that carry a whole frame or
        /// the first fragment of one (a frame larger than the link MTU takes several
        /// packets; it is one transmission).
        public var frames: [Int] = Array(repeating: 0, count: Kind.allCases.count)
        /// Packets dropped by the simulated loss.
        public var dropped: Int
        /// Bytes of the ``Kind/announce`` packets by routing frame: announcements,
        /// route requests, route summaries, route listings, route hops (``RoutingFrame`` raw value).
        public var routingBytes: [Int] = Array(repeating: 0, count: RoutingFrame.allCases.count)
        /// ANNOUNCE frames whose (origin, sequence) first crossed a link in the current
        /// phase (``WireTally/beginPhase()``): news of a sequence new in the phase.
        public var announcesOfNewSequences = 0
        /// ANNOUNCE frames whose (origin, sequence) crossed a link before the current
        /// phase began: route changes, repairs and answers at sequences already known.
        public var announcesOfOldSequences = 0
        /// Distinct (origin, sequence) pairs that first crossed a link.
        public var sequencesFirstSent = 0
        /// ANNOUNCE frames with the solicited flag.
        public var solicitedAnnounces = 0

        /// Bytes of routing frames of `frame`'s type.
        public func routing(_ frame: RoutingFrame) -> Int { routingBytes[frame.rawValue] }

        /// Packets of `kind`.
        public func packets(_ kind: Kind) -> Int { packets[kind.rawValue] }
        /// Bytes of `kind`.
        public func bytes(_ kind: Kind) -> Int { bytes[kind.rawValue] }
        /// Frames (transmissions) of `kind`.
        public func frames(_ kind: Kind) -> Int { frames[kind.rawValue] }
        /// Bytes of every kind.
        public var totalBytes: Int { bytes.reduce(0, +) }

        /// The counts since `earlier`.
        public func since(_ earlier: Snapshot) -> Snapshot {
            Snapshot(
                packets: zip(packets, earlier.packets).map { $0 - $1 },
                bytes: zip(bytes, earlier.bytes).map { $0 - $1 },
                frames: zip(frames, earlier.frames).map { $0 - $1 },
                dropped: dropped - earlier.dropped,
                routingBytes: zip(routingBytes, earlier.routingBytes).map { $0 - $1 },
                announcesOfNewSequences: announcesOfNewSequences - earlier.announcesOfNewSequences,
                announcesOfOldSequences: announcesOfOldSequences - earlier.announcesOfOldSequences,
                sequencesFirstSent: sequencesFirstSent - earlier.sequencesFirstSent,
                solicitedAnnounces: solicitedAnnounces - earlier.solicitedAnnounces
            )
        }
    }

    private let counts = Mutex(
        Snapshot(
            packets: Array(repeating: 0, count: Kind.allCases.count),
            bytes: Array(repeating: 0, count: Kind.allCases.count),
            dropped: 0
        )
    )
    private let activityCount = Atomic<Int>(0)
    private let lieCount = Atomic<Int>(0)
    /// The current phase; per (origin, sequence) announced, what crossed the links of
    /// each; and the ROUTE REQUEST frames of each phase by target (32 bytes).
    private let census = Mutex(
        (phase: 0, firstSent: [AnnouncedSequence: SequenceCount](), requests: [Int: [[UInt8]: Int]]())
    )

    /// What crossed the links of one announced sequence.
    public struct SequenceCount: Sendable {
        /// The phase in which it first crossed a link.
        public var phase: Int
        /// ANNOUNCE frames of it that crossed a link.
        public var frames = 0
        /// Of ``frames``, those with the solicited flag.
        public var solicited = 0
        /// ``frames`` by hop count (index: hops; 15 counts 15 and more).
        public var byHops = Array(repeating: 0, count: 16)
    }

    /// ROUTE REQUEST frames that crossed a link in `phase`, by target peer ID bytes.
    public func requestsByTarget(phase: Int) -> [[UInt8]: Int] {
        census.withLock { $0.requests[phase] ?? [:] }
    }

    private struct AnnouncedSequence: Hashable {
        var origin: [UInt8]
        var sequence: UInt64
    }

    /// An empty tally.
    public init() {}

    /// ANNOUNCE frames whose hop count a lying relay rewrote
    /// (``SimulationConfiguration/liars``).
    public var lies: Int { lieCount.load(ordering: .relaxed) }

    func lied() {
        lieCount.add(1, ordering: .relaxed)
    }

    /// Packets written or read so far, on every link.
    public var activity: Int { activityCount.load(ordering: .relaxed) }

    /// The counts now.
    public var snapshot: Snapshot { counts.withLock { $0 } }

    /// Starts a new phase for the announcement census: from now on, announcements of a
    /// sequence sent before count as old.
    public func beginPhase() {
        census.withLock { $0.phase += 1 }
    }

    /// The sequences first sent in `phase` with the most frames: origin (first 4 bytes,
    /// hex), sequence, and counts.
    public func busiestSequences(phase: Int, count: Int) -> [(origin: String, sequence: UInt64, SequenceCount)] {
        census.withLock { census in
            census.firstSent.filter { $0.value.phase == phase }.sorted { $0.value.frames > $1.value.frames }.prefix(
                count
            ).map {
                ($0.key.origin.prefix(4).map { String($0, radix: 16) }.joined(), $0.key.sequence, $0.value)
            }
        }
    }

    /// Counts a packet written to a link; `packet` (a whole frame) is looked into for
    /// the announcement census.
    func wrote(
        _ kind: Kind,
        routing: RoutingFrame? = nil,
        count: Int,
        startsFrame: Bool,
        dropped: Bool,
        packet: [UInt8] = []
    ) {
        // (first sent, new in this phase), nil for any other packet.
        var census: (first: Bool, new: Bool)?
        var solicited = false
        if routing == .announce, packet.first == 0xC0, packet.count >= 1 + 4 + AnnounceFrame.bodySize,
            packet[2] == Frame.Kind.announce.rawValue
        {
            let key = AnnouncedSequence(
                origin: Array(packet[5..<37]),
                sequence: packet[37..<45].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            )
            solicited = packet[4] & UInt8(AnnounceFrame.solicitedFlag) != 0
            let hops = Int(min(packet[45], 15))
            census = self.census.withLock { census in
                let first = census.firstSent[key] == nil
                var count = census.firstSent[key] ?? SequenceCount(phase: census.phase)
                count.frames += 1
                if solicited { count.solicited += 1 }
                count.byHops[hops] += 1
                census.firstSent[key] = count
                return (first, count.phase == census.phase)
            }
        }
        if routing == .request, packet.first == 0xC0, packet.count >= 37, packet[2] == Frame.Kind.routeRequest.rawValue
        {
            let target = Array(packet[5..<37])
            self.census.withLock { $0.requests[$0.phase, default: [:]][target, default: 0] += 1 }
        }
        counts.withLock { counts in
            if let census {
                if census.new { counts.announcesOfNewSequences += 1 } else { counts.announcesOfOldSequences += 1 }
                if census.first { counts.sequencesFirstSent += 1 }
                if solicited { counts.solicitedAnnounces += 1 }
            }
            counts.packets[kind.rawValue] += 1
            if startsFrame { counts.frames[kind.rawValue] += 1 }
            counts.bytes[kind.rawValue] += count
            if let routing { counts.routingBytes[routing.rawValue] += count }
            if dropped { counts.dropped += 1 }
        }
        activityCount.add(1, ordering: .relaxed)
    }

    func read() {
        activityCount.add(1, ordering: .relaxed)
    }

    /// Whether a packet carries a whole frame or the first fragment of one.
    static func startsFrame(_ packet: [UInt8]) -> Bool {
        packet.first == 0xC0 || packet.first == 0x80
    }

    /// What a packet (PacketFramer flag byte, then the frame or a fragment of it) shows
    /// of its frame: nothing (a later fragment: it takes its first's kind), no valid
    /// frame header, or the header's kind and flags.
    private enum Header {
        case continuation
        case invalid
        case frame(Frame.Kind?, flags: UInt16)

        init(_ packet: [UInt8]) {
            let frameStart: Int
            switch packet.first {
            case 0xC0: frameStart = 1
            case 0x80: frameStart = 3
            case nil:
                self = .invalid
                return
            default:
                self = .continuation
                return
            }
            guard packet.count >= frameStart + 4, packet[frameStart] == Frame.version else {
                self = .invalid
                return
            }
            self = .frame(
                Frame.Kind(rawValue: packet[frameStart + 1]),
                flags: UInt16(packet[frameStart + 2]) << 8 | UInt16(packet[frameStart + 3])
            )
        }
    }

    /// The routing frame a packet starts (nil for any other packet); a later fragment
    /// takes its first's, `previous`.
    static func routingFrame(_ packet: [UInt8], previous: RoutingFrame?) -> RoutingFrame? {
        switch Header(packet) {
        case .continuation: previous
        case .invalid: nil
        case .frame(.announce, _): .announce
        case .frame(.routeRequest, _): .request
        case .frame(.routeSummary, _): .summary
        case .frame(.routeListing, _): .listing
        case .frame(.routeHops, _): .hops
        case .frame: nil
        }
    }

    /// What a packet carries; a later fragment takes its first's kind, `previous`.
    static func classify(_ packet: [UInt8], previous: Kind) -> Kind {
        switch Header(packet) {
        case .continuation: previous
        case .invalid: .other
        case .frame(.announce, _), .frame(.routeRequest, _), .frame(.routeSummary, _), .frame(.routeListing, _),
            .frame(.routeHops, _):
            .announce
        case .frame(.topicMessage, _): .topicMessage
        case .frame(.topicControl, _): .topicControl
        case .frame(.data, let flags): flags & DataFrame.receiptFlag != 0 ? .receipt : .message
        case .frame: .other
        }
    }
}
