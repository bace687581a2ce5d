/// A router frame: the unit the core exchanges with a peer over one link, after the
/// link handshake and before fragmentation. Layout in `docs/PROTOCOL.md`.
///
/// Every frame starts with a 4-byte header: version (1), type, 16-bit flags
/// (receivers ignore unknown flags). An encoded frame is at most
/// ``Frame/maxEncodedSize`` bytes, so that it plus the link cipher's tag fits in one
/// 65,535-byte Noise message.
package enum Frame: Sendable, Hashable {
    /// One chunk of a message, with a per-link hop sequence number.
    case data(DataFrame)
    /// A cumulative + selective hop acknowledgement.
    case ack(AckFrame)
    /// A keepalive / RTT probe.
    case ping(nonce: UInt64)
    /// The answer to a ping, echoing its nonce.
    case pong(nonce: UInt64)
    /// A signed route announcement (not acknowledged).
    case announce(AnnounceFrame)
    /// A signed record of where the sender can also be reached (not acknowledged).
    case addresses(AddressesFrame)
    /// A signed topic message (gossip, not acknowledged).
    case topicMessage(TopicMessageFrame)
    /// A topic subscription, mesh or lazy-repair control (not acknowledged).
    case topicControl(TopicControlFrame)
    /// A request for a route to a node (not acknowledged).
    case routeRequest(RouteRequestFrame)
    /// Hashes of what the sender's route table holds, per bucket of origins (not acknowledged).
    case routeSummary(RouteSummaryFrame)
    /// The pairs of the buckets a summary showed different (not acknowledged).
    case routeListing(RouteListingFrame)
    /// The hop counts of the sender's routes, to a neighbour whose summary matched (not
    /// acknowledged).
    case routeHops(RouteHopsFrame)

    /// The protocol version this code speaks.
    package static let version: UInt8 = wireProtocolVersion
    /// The largest encoded frame.
    package static let maxEncodedSize = 65_000
    /// Bytes of every message chunk but the last.
    package static let chunkSize = 64_000
    /// The most selective acknowledgements one ACK frame carries.
    package static let maxSelectiveAcks = 256
    /// The largest message length the decoder accepts by default (16 MiB).
    package static let defaultMaxMessageLength = RouterConfiguration.defaultMaxMessageSize

    /// Frame type codes on the wire.
    package enum Kind: UInt8, Sendable {
        case data = 0x01
        case ack = 0x02
        case ping = 0x03
        case pong = 0x04
        case announce = 0x05
        case addresses = 0x08
        case topicMessage = 0x06
        case topicControl = 0x07
        case routeRequest = 0x09
        case routeSummary = 0x0A
        case routeListing = 0x0B
        case routeHops = 0x0C
    }

    static let headerSize = 4
    static let dataHeaderSize = 4 + 16 + 32 + 32 + 1 + 2 + 2 + 4 + 4

    /// The encoded bytes.
    package func encoded() -> [UInt8] {
        var writer: ByteWriter
        switch self {
        case .data(let data):
            writer = ByteWriter(capacity: Self.headerSize + Self.dataHeaderSize + data.payload.count)
            writer.writeHeader(.data, flags: data.flags)
            writer.write(data.sequence)
            writer.write(data.messageID.high)
            writer.write(data.messageID.low)
            writer.write(contentsOf: data.origin.bytes)
            writer.write(contentsOf: data.destination.bytes)
            writer.write(data.ttl)
            writer.write(data.chunkIndex)
            writer.write(data.chunkCount)
            writer.write(data.messageLength)
            writer.write(UInt32(data.payload.count))
            writer.write(contentsOf: data.payload)
        case .ack(let ack):
            writer = ByteWriter(capacity: Self.headerSize + 6 + 4 * ack.selective.count)
            writer.writeHeader(.ack, flags: 0)
            writer.write(ack.cumulative)
            writer.write(UInt16(ack.selective.count))
            for sequence in ack.selective { writer.write(sequence) }
        case .ping(let nonce):
            writer = ByteWriter(capacity: 12)
            writer.writeHeader(.ping, flags: 0)
            writer.write(nonce)
        case .pong(let nonce):
            writer = ByteWriter(capacity: 12)
            writer.writeHeader(.pong, flags: 0)
            writer.write(nonce)
        case .announce(let announce):
            writer = ByteWriter(capacity: Self.headerSize + AnnounceFrame.bodySize)
            writer.writeHeader(.announce, flags: announce.flags)
            announce.write(to: &writer)
        case .addresses(let record):
            writer = ByteWriter(capacity: Self.headerSize + record.bodySize)
            writer.writeHeader(.addresses, flags: 0)
            record.write(to: &writer)
        case .topicMessage(let message):
            writer = ByteWriter(capacity: Self.headerSize + message.encodedSize)
            writer.writeHeader(.topicMessage, flags: message.flags)
            message.write(to: &writer)
        case .topicControl(let control):
            writer = ByteWriter(capacity: Self.headerSize + control.encodedSize)
            writer.writeHeader(.topicControl, flags: 0)
            control.write(to: &writer)
        case .routeRequest(let request):
            writer = ByteWriter(capacity: Self.headerSize + RouteRequestFrame.bodySize)
            writer.writeHeader(.routeRequest, flags: 0)
            request.write(to: &writer)
        case .routeSummary(let summary):
            writer = ByteWriter(capacity: Self.headerSize + summary.bodySize)
            writer.writeHeader(.routeSummary, flags: 0)
            summary.write(to: &writer)
        case .routeListing(let listing):
            writer = ByteWriter(capacity: Self.headerSize + listing.bodySize)
            writer.writeHeader(.routeListing, flags: 0)
            listing.write(to: &writer)
        case .routeHops(let hops):
            writer = ByteWriter(capacity: Self.headerSize + hops.bodySize)
            writer.writeHeader(.routeHops, flags: 0)
            hops.write(to: &writer)
        }
        return writer.bytes
    }

    /// Decodes one inbound frame like ``decode(_:maxMessageLength:)``, except that a
    /// frame of a type this release does not know, with a complete header of this
    /// version, is nil: a receiver ignores it and counts it (docs/PROTOCOL.md §A.11).
    /// Frames of the known types are decoded as strictly as ever.
    package static func decodeInbound(
        _ bytes: [UInt8],
        maxMessageLength: Int = defaultMaxMessageLength
    ) throws(MeshError) -> Frame? {
        if bytes.count >= headerSize, bytes.count <= maxEncodedSize, bytes[0] == version,
            Kind(rawValue: bytes[1]) == nil
        {
            return nil
        }
        return try decode(bytes, maxMessageLength: maxMessageLength)
    }

    /// Decodes one frame, rejecting every malformed input with a ``MeshError`` of code
    /// `.malformedFrame` (or `.frameTooLarge`). Never traps; allocates at most the
    /// input's size.
    /// - Parameters:
    ///   - bytes: exactly one encoded frame.
    ///   - maxMessageLength: the largest message length a data frame may declare.
    package static func decode(
        _ bytes: [UInt8],
        maxMessageLength: Int = defaultMaxMessageLength
    ) throws(MeshError) -> Frame {
        guard bytes.count <= maxEncodedSize else {
            throw MeshError(.frameTooLarge, "frame of \(bytes.count) bytes exceeds the \(maxEncodedSize)-byte limit")
        }
        var reader = ByteReader(bytes, context: "frame")
        let version = try reader.readInteger(UInt8.self, field: "version")
        guard version == Self.version else {
            throw MeshError(.malformedFrame, "frame: unsupported version \(version) (this node speaks \(Self.version))")
        }
        let rawKind = try reader.readInteger(UInt8.self, field: "type")
        let flags = try reader.readInteger(UInt16.self, field: "flags")
        guard let kind = Kind(rawValue: rawKind) else {
            throw MeshError(.malformedFrame, "frame: unknown type 0x\(String(rawKind, radix: 16))")
        }
        let frame: Frame
        switch kind {
        case .data:
            let sequence = try reader.readInteger(UInt32.self, field: "sequence")
            let high = try reader.readInteger(UInt64.self, field: "message id")
            let low = try reader.readInteger(UInt64.self, field: "message id")
            let origin = try PeerID(bytes: reader.readBytes(32, field: "origin"))
            let destination = try PeerID(bytes: reader.readBytes(32, field: "destination"))
            let ttl = try reader.readInteger(UInt8.self, field: "ttl")
            let chunkIndex = try reader.readInteger(UInt16.self, field: "chunk index")
            let chunkCount = try reader.readInteger(UInt16.self, field: "chunk count")
            let messageLength = try reader.readInteger(UInt32.self, field: "message length")
            let payloadLength = try reader.readInteger(UInt32.self, field: "payload length")
            guard sequence != 0 else { throw MeshError(.malformedFrame, "data frame: sequence 0 is reserved") }
            guard Int(messageLength) <= maxMessageLength else {
                throw MeshError(
                    .frameTooLarge,
                    "data frame: message length \(messageLength) exceeds the \(maxMessageLength)-byte limit"
                )
            }
            let expectedChunks = max(1, (Int(messageLength) + chunkSize - 1) / chunkSize)
            guard Int(chunkCount) == expectedChunks else {
                throw MeshError(
                    .malformedFrame,
                    "data frame: chunk count \(chunkCount) does not match message length \(messageLength) (expected \(expectedChunks))"
                )
            }
            guard chunkIndex < chunkCount else {
                throw MeshError(
                    .malformedFrame,
                    "data frame: chunk index \(chunkIndex) is not below chunk count \(chunkCount)"
                )
            }
            let expectedPayload = DataFrame.chunkLength(index: Int(chunkIndex), messageLength: Int(messageLength))
            guard Int(payloadLength) == expectedPayload else {
                throw MeshError(
                    .malformedFrame,
                    "data frame: chunk \(chunkIndex) carries \(payloadLength) bytes, expected \(expectedPayload)"
                )
            }
            guard reader.remaining == Int(payloadLength) else {
                throw MeshError(
                    .malformedFrame,
                    "data frame: declares \(payloadLength) payload bytes but \(reader.remaining) follow"
                )
            }
            frame = .data(
                DataFrame(
                    sequence: sequence,
                    messageID: MessageID(high: high, low: low),
                    origin: origin,
                    destination: destination,
                    ttl: ttl,
                    chunkIndex: chunkIndex,
                    chunkCount: chunkCount,
                    messageLength: messageLength,
                    flags: flags,
                    payload: Array(reader.readRest())
                )
            )
        case .ack:
            let cumulative = try reader.readInteger(UInt32.self, field: "cumulative")
            let count = try reader.readInteger(UInt16.self, field: "selective count")
            guard Int(count) <= maxSelectiveAcks else {
                throw MeshError(
                    .malformedFrame,
                    "ack frame: \(count) selective acknowledgements exceed the limit of \(maxSelectiveAcks)"
                )
            }
            guard reader.remaining == Int(count) * 4 else {
                throw MeshError(
                    .malformedFrame,
                    "ack frame: declares \(count) entries but \(reader.remaining) bytes follow"
                )
            }
            var selective: [UInt32] = []
            selective.reserveCapacity(Int(count))
            for _ in 0..<count { selective.append(try reader.readInteger(UInt32.self, field: "selective")) }
            frame = .ack(AckFrame(cumulative: cumulative, selective: selective))
        case .ping, .pong:
            let nonce = try reader.readInteger(UInt64.self, field: "nonce")
            guard reader.remaining == 0 else {
                throw MeshError(.malformedFrame, "\(kind) frame: \(reader.remaining) trailing bytes")
            }
            frame = kind == .ping ? .ping(nonce: nonce) : .pong(nonce: nonce)
        case .announce:
            frame = .announce(try AnnounceFrame.read(from: &reader, flags: flags))
        case .addresses:
            frame = .addresses(try AddressesFrame.read(from: &reader))
        case .topicMessage:
            frame = .topicMessage(try TopicMessageFrame.read(from: &reader, flags: flags))
        case .topicControl:
            frame = .topicControl(try TopicControlFrame.read(from: &reader))
        case .routeRequest:
            frame = .routeRequest(try RouteRequestFrame.read(from: &reader))
        case .routeSummary:
            frame = .routeSummary(try RouteSummaryFrame.read(from: &reader))
        case .routeListing:
            frame = .routeListing(try RouteListingFrame.read(from: &reader))
        case .routeHops:
            frame = .routeHops(try RouteHopsFrame.read(from: &reader))
        }
        return frame
    }
}

/// One chunk of one message.
package struct DataFrame: Sendable, Hashable {
    /// Per-link hop sequence number (from 1), acknowledged by the next hop.
    package var sequence: UInt32
    /// The message's identity (same for every chunk and every retry).
    package var messageID: MessageID
    /// The node that created the message.
    package var origin: PeerID
    /// The node the message is for.
    package var destination: PeerID
    /// Hops the message may still take.
    package var ttl: UInt8
    /// This chunk's index, from 0.
    package var chunkIndex: UInt16
    /// How many chunks the message has (1 for messages up to ``Frame/chunkSize``).
    package var chunkCount: UInt16
    /// The whole message's length in bytes.
    package var messageLength: UInt32
    /// Message flags (receivers ignore unknown bits).
    package var flags: UInt16
    /// This chunk's bytes.
    package var payload: [UInt8]

    /// Creates a data frame.
    package init(
        sequence: UInt32,
        messageID: MessageID,
        origin: PeerID,
        destination: PeerID,
        ttl: UInt8,
        chunkIndex: UInt16,
        chunkCount: UInt16,
        messageLength: UInt32,
        flags: UInt16 = 0,
        payload: [UInt8]
    ) {
        self.sequence = sequence
        self.messageID = messageID
        self.origin = origin
        self.destination = destination
        self.ttl = ttl
        self.chunkIndex = chunkIndex
        self.chunkCount = chunkCount
        self.messageLength = messageLength
        self.flags = flags
        self.payload = payload
    }

    /// Flag bit: the message is a sealed envelope (opened by the destination's
    /// `MessageSealer`). Without it the destination accepts the message only from
    /// a link whose authenticated remote is the message's origin.
    package static let sealedFlag: UInt16 = 0x0001
    /// Flag bit: the message is a ``DeliveryReceipt`` from its origin (the destination
    /// of the message it answers) for the frame's destination. Never delivered to the
    /// application and never answered with a receipt.
    package static let receiptFlag: UInt16 = 0x0002
    /// Flag bit: the message is flooded (docs/PROTOCOL.md §A.9): a relay without a
    /// route to its destination sends it on to every neighbour that has not offered it,
    /// after a short random delay, and a copy offered again is a duplicate, never a loop.
    package static let floodFlag: UInt16 = 0x0004
    /// Flag bit: the message is an emergency (§A.10): flooded whatever the routes, ahead
    /// of every queue, within its own rate limits. Always sent with ``floodFlag``.
    package static let emergencyFlag: UInt16 = 0x0008
    /// Flag bit: a flood that routes do not stop (§A.9): started by a node whose route
    /// to the destination kept failing, so every relay sends it on as a flood (unless a
    /// link to the destination is up), whatever route it holds. Sent with ``floodFlag``.
    package static let floodThroughFlag: UInt16 = 0x0010
    /// Stored only, never on the wire (cleared when a frame is built or taken in): this
    /// node started the flood of its copy already (as origin, or as a relay whose route
    /// failed), and keeps the copy until a route to the destination appears.
    package static let floodStartedLocalFlag: UInt16 = 0x8000
    /// The bits that never leave the node.
    package static let localFlags: UInt16 = floodStartedLocalFlag

    /// The number of bytes chunk `index` of a message of `messageLength` bytes carries.
    package static func chunkLength(index: Int, messageLength: Int) -> Int {
        let start = index * Frame.chunkSize
        return max(0, min(Frame.chunkSize, messageLength - start))
    }

    /// The number of chunks a message of `length` bytes needs.
    package static func chunkCount(messageLength length: Int) -> Int {
        max(1, (length + Frame.chunkSize - 1) / Frame.chunkSize)
    }
}

/// A hop acknowledgement: every sequence number up to and including `cumulative`,
/// plus the listed ones above it.
package struct AckFrame: Sendable, Hashable {
    /// Highest sequence number below which nothing is missing.
    package var cumulative: UInt32
    /// Sequence numbers above `cumulative` that arrived (at most 256).
    package var selective: [UInt32]

    /// Creates an acknowledgement.
    package init(cumulative: UInt32, selective: [UInt32] = []) {
        self.cumulative = cumulative
        self.selective = selective
    }
}

extension ByteWriter {
    fileprivate mutating func writeHeader(_ kind: Frame.Kind, flags: UInt16) {
        write(Frame.version)
        write(kind.rawValue)
        write(flags)
    }
}
