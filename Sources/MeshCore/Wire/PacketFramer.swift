/// Splits segments (a handshake message or a sealed router frame, at most 65,535
/// bytes) into packets that fit a link's MTU, and puts them back together.
///
/// Each packet starts with one flag byte: `0xC0` whole segment, `0x80` first
/// fragment (followed by the segment's total length as a big-endian UInt16), `0x00`
/// middle fragment, `0x40` last fragment. Other flag values are malformed. Links are
/// ordered and the core never interleaves two segments on one link, so fragments
/// carry no segment ID. Works for MTUs down to ``minimumMTU``.
public enum PacketFramer {
    /// The smallest MTU the core supports (BLE's default ATT MTU is 23).
    public static let minimumMTU = 4
    /// The largest segment.
    public static let maxSegmentSize = 65_535

    static let whole: UInt8 = 0xC0
    static let first: UInt8 = 0x80
    static let middle: UInt8 = 0x00
    static let last: UInt8 = 0x40

    /// The packets for one segment.
    /// - Throws: `.frameTooLarge` for segments over ``maxSegmentSize``,
    ///   `.invalidArgument` for an MTU below ``minimumMTU``.
    public static func packets(for segment: [UInt8], mtu: Int) throws(MeshError) -> [[UInt8]] {
        guard mtu >= minimumMTU else {
            throw MeshError(.invalidArgument, "link MTU \(mtu) is below the minimum of \(minimumMTU)")
        }
        guard segment.count <= maxSegmentSize else {
            throw MeshError(.frameTooLarge, "segment of \(segment.count) bytes exceeds \(maxSegmentSize)")
        }
        if segment.count + 1 <= mtu {
            var packet = [UInt8]()
            packet.reserveCapacity(segment.count + 1)
            packet.append(whole)
            packet.append(contentsOf: segment)
            return [packet]
        }
        var packets: [[UInt8]] = []
        packets.reserveCapacity(segment.count / (mtu - 1) + 2)
        let firstLength = mtu - 3
        packets.append([first, UInt8(segment.count >> 8), UInt8(segment.count & 0xFF)] + segment[0..<firstLength])
        var offset = firstLength
        while offset < segment.count {
            let length = min(mtu - 1, segment.count - offset)
            let flag = offset + length == segment.count ? last : middle
            var packet = [UInt8]()
            packet.reserveCapacity(length + 1)
            packet.append(flag)
            packet.append(contentsOf: segment[offset..<(offset + length)])
            packets.append(packet)
            offset += length
        }
        return packets
    }
}

/// Reassembles the packets of one link into segments. Holds at most one partial
/// segment (at most 65,535 bytes) and drops it when it is older than the timeout.
public struct PacketReassembler: Sendable {
    /// The result of feeding one packet.
    public enum Output: Sendable, Equatable {
        /// A whole segment.
        case segment([UInt8])
        /// More packets are needed.
        case needMore
    }

    private var buffer: [UInt8] = []
    private var expected = 0
    private var inProgress = false
    private var startedAt: ContinuousClock.Instant = .now
    private let timeout: Duration
    /// Partial segments dropped (superseded, timed out or malformed).
    public private(set) var discarded = 0

    /// Creates a reassembler that forgets a partial segment after `timeout`.
    public init(timeout: Duration = .seconds(30)) {
        self.timeout = timeout
    }

    /// Feeds one packet.
    /// - Throws: `.malformedFrame` when the packet cannot be part of a valid segment
    ///   (empty packet, unknown flag, first fragment under 4 bytes or not shorter than
    ///   the total it declares, continuation without a first fragment, fragments over
    ///   or under the declared total); the partial segment is dropped. The reassembler
    ///   could go on, but the router closes the link on any of these errors.
    public mutating func feed(_ packet: [UInt8]) throws(MeshError) -> Output {
        guard let flag = packet.first else {
            throw MeshError(.malformedFrame, "packet: empty")
        }
        if inProgress && ContinuousClock.now - startedAt > timeout {
            reset(discard: true)
        }
        switch flag {
        case PacketFramer.whole:
            if inProgress { reset(discard: true) }
            return .segment(Array(packet[1...]))
        case PacketFramer.first:
            if inProgress { reset(discard: true) }
            guard packet.count >= 4 else {
                throw MeshError(.malformedFrame, "packet: first fragment of \(packet.count) bytes is too short")
            }
            let total = Int(packet[1]) << 8 | Int(packet[2])
            guard total > packet.count - 3 else {
                throw MeshError(
                    .malformedFrame,
                    "packet: first fragment carries \(packet.count - 3) bytes of a \(total)-byte segment"
                )
            }
            buffer = []
            buffer.reserveCapacity(total)
            buffer.append(contentsOf: packet[3...])
            expected = total
            inProgress = true
            startedAt = .now
            return .needMore
        case PacketFramer.middle, PacketFramer.last:
            guard inProgress else {
                discarded += 1
                throw MeshError(.malformedFrame, "packet: continuation without a first fragment")
            }
            // Format errors before `reset`, which zeroes `expected`.
            guard buffer.count + packet.count - 1 <= expected else {
                let message =
                    "packet: fragments exceed the declared segment length \(expected) (\(buffer.count + packet.count - 1) bytes)"
                reset(discard: true)
                throw MeshError(.malformedFrame, message)
            }
            buffer.append(contentsOf: packet[1...])
            if flag == PacketFramer.last {
                guard buffer.count == expected else {
                    let message = "packet: segment ended at \(buffer.count) of \(expected) declared bytes"
                    reset(discard: true)
                    throw MeshError(.malformedFrame, message)
                }
                let segment = buffer
                reset(discard: false)
                return .segment(segment)
            }
            return .needMore
        default:
            if inProgress { reset(discard: true) }
            throw MeshError(.malformedFrame, "packet: unknown flag byte 0x\(String(flag, radix: 16))")
        }
    }

    private mutating func reset(discard: Bool) {
        if discard { discarded += 1 }
        buffer = []
        expected = 0
        inProgress = false
    }
}
