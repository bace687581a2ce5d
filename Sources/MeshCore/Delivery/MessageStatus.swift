/// Where a message from this node is in its life: queued → sent (the next hop took
/// custody) → delivered (the destination has it), or failed / expired.
///
/// Extensible like ``MeshError/Code``: encoded as its name.
public struct MessageStatus: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The status's stable name.
    public let name: String
    /// Creates a status.
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// Stored; waiting for a route, or being sent.
    public static let queued = MessageStatus("queued")
    /// The next hop acknowledged every chunk; a relay holds it.
    public static let sent = MessageStatus("sent")
    /// The destination acknowledged it (directly, or by a receipt).
    public static let delivered = MessageStatus("delivered")
    /// It could not be sent; the record's reason says why.
    public static let failed = MessageStatus("failed")
    /// Its expiry passed before it could be delivered.
    public static let expired = MessageStatus("expired")
    /// A message this node carried for another origin, taken by the next hop: this
    /// node's part is done (the origin learns of delivery from the receipt).
    public static let relayed = MessageStatus("relayed")
    /// Delivered, and its destination's user read it: the destination node sent a read
    /// receipt (an option of the node, `messages.read_receipts`).
    public static let read = MessageStatus("read")

    /// Whether the message will not move any more.
    public var isFinal: Bool {
        self == .delivered || self == .failed || self == .expired || self == .relayed || self == .read
    }

    public init(from decoder: any Decoder) throws {
        name = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}

/// A message from this node as the outbound queue keeps it.
public struct OutboundMessage: Sendable, Hashable {
    /// Its ID.
    public var id: MessageID
    /// The node it is for.
    public var destination: PeerID
    /// The bytes that go on the wire (already sealed when `flags` say so).
    public var payload: [UInt8]
    /// DATA frame flags (bit 0: sealed envelope; bit 1: delivery receipt).
    public var flags: UInt16
    /// The digest of `payload` a ``DeliveryReceipt`` must carry (empty when the router
    /// has no ``ReceiptSigner``).
    public var contentDigest: [UInt8]
    /// How long it may wait for delivery; nil for the queue's default.
    public var expiresAfter: Duration?
    /// The node that created it, when this node relays it for another; nil for a
    /// message of this node's own.
    public var origin: PeerID?
    /// Hops it may still take from here (the DATA frame's TTL); nil for the router's
    /// default TTL (a message of this node's own).
    public var ttl: UInt8?
    /// The neighbour that handed it to this node, when this node relays it; kept with
    /// the message so the loop rule (docs/PROTOCOL.md §A.6, rule 3) holds across a
    /// restart.
    public var previousHop: PeerID?
    /// The payload's size before this node sealed it, when `payload` is an envelope
    /// this node made of its own message; nil otherwise. The history records this
    /// size, the one the user sent, rather than the envelope's.
    public var payloadBytes: Int?

    /// Creates a message record.
    public init(
        id: MessageID,
        destination: PeerID,
        payload: [UInt8],
        flags: UInt16,
        contentDigest: [UInt8] = [],
        expiresAfter: Duration? = nil,
        origin: PeerID? = nil,
        ttl: UInt8? = nil,
        previousHop: PeerID? = nil,
        payloadBytes: Int? = nil
    ) {
        self.previousHop = previousHop
        self.payloadBytes = payloadBytes
        self.id = id
        self.destination = destination
        self.payload = payload
        self.flags = flags
        self.contentDigest = contentDigest
        self.expiresAfter = expiresAfter
        self.origin = origin
        self.ttl = ttl
    }

    /// Whether this node relays it for another origin.
    public var isRelayed: Bool { origin != nil }

    /// Whether this is a delivery receipt rather than a message of the application.
    public var isReceipt: Bool { flags & DataFrame.receiptFlag != 0 }

    /// Whether this is an emergency message (flooded ahead of every queue).
    public var isEmergency: Bool { flags & DataFrame.emergencyFlag != 0 }
}

/// What the outbound queue knows of one message.
public struct OutboundRecord: Sendable, Hashable {
    /// The message's ID.
    public var id: MessageID
    /// The node it is for.
    public var destination: PeerID
    /// Its payload's size: the plaintext's for a message this node sealed (a relayed
    /// one's is its envelope's, all the relay has), whatever a later sealing made of
    /// the bytes on the wire.
    public var bytes: Int
    /// Where it is.
    public var status: MessageStatus
    /// The transport of the hop that took it, once sent.
    public var transport: String?
    /// Why it failed, when it did (or why its last attempt did, while queued).
    public var reason: String?
    /// DATA frame flags it is sent with.
    public var flags: UInt16
    /// The digest a receipt for it must carry (empty without a ``ReceiptSigner``).
    public var contentDigest: [UInt8]
    /// Send attempts so far.
    public var attempts: Int
    /// The node that created it, when this node relays it for another; nil for a
    /// message of this node's own.
    public var origin: PeerID?
    /// The neighbour that handed it to this node, when this node relays it.
    public var previousHop: PeerID?
    /// The TTL it goes on with (one below the TTL it came with), when this node relays
    /// it: with ``previousHop``, what tells a copy that came round a loop from a retry
    /// of the hop that brought it (docs/PROTOCOL.md §A.6 rule 3), across restarts.
    public var ttl: UInt8?

    /// Creates a record.
    public init(
        id: MessageID,
        destination: PeerID,
        bytes: Int,
        status: MessageStatus,
        transport: String? = nil,
        reason: String? = nil,
        flags: UInt16 = 0,
        contentDigest: [UInt8] = [],
        attempts: Int = 0,
        origin: PeerID? = nil,
        previousHop: PeerID? = nil,
        ttl: UInt8? = nil
    ) {
        self.previousHop = previousHop
        self.ttl = ttl
        self.origin = origin
        self.id = id
        self.destination = destination
        self.bytes = bytes
        self.status = status
        self.transport = transport
        self.reason = reason
        self.flags = flags
        self.contentDigest = contentDigest
        self.attempts = attempts
    }

    /// Whether the record has reached `status` or moved past it: queued < sent <
    /// delivered; failed and expired are past everything.
    public func hasReached(_ target: MessageStatus) -> Bool {
        func rank(_ status: MessageStatus) -> Int {
            switch status {
            case .queued: 0
            case .sent: 1
            case .delivered: 2
            default: status.isFinal ? 3 : 0
            }
        }
        return status.isFinal || rank(status) >= rank(target)
    }
}

extension OutboundRecord {
    /// Whether this is an emergency message (flooded ahead of every queue).
    public var isEmergency: Bool { flags & DataFrame.emergencyFlag != 0 }
}
