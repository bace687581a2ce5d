/// Something the router did or saw, for users who want to know why a message took
/// the path it took. Subscribe with ``Router/events()``.
///
/// A `Codable` record with a ``Kind`` (an extensible set of names, so a new kind is
/// not an API break for clients that decode the event stream) and the fields that
/// kind uses; the others are nil. Encoded with snake_case keys:
/// `{"kind":"link_up","peer":"…","transport":"tcp","link":3}`.
public struct RouterEvent: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What happened. Compare with the static members; unknown names decode fine.
    public struct Kind: Hashable, Sendable, Codable, CustomStringConvertible {
        /// The kind's stable name.
        public let name: String
        /// Creates a kind.
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A transport reported the addresses it listens on (it runs).
        public static let transportStarted = Kind("transport_started")
        /// A transport could not start or failed; the node carries on without it.
        public static let transportUnavailable = Kind("transport_unavailable")
        /// Discovery reported a hint.
        public static let peerDiscovered = Kind("peer_discovered")
        /// Discovery lost a hint.
        public static let peerLost = Kind("peer_lost")
        /// A link completed its handshake and is in use.
        public static let linkUp = Kind("link_up")
        /// A link ended.
        public static let linkDown = Kind("link_down")
        /// A link's handshake failed.
        public static let handshakeFailed = Kind("handshake_failed")
        /// A link delivered bytes that are not a valid frame, or a message was refused
        /// as forged.
        public static let malformedInput = Kind("malformed_input")
        /// Traffic to a peer moved to a less preferred transport.
        public static let escalated = Kind("escalated")
        /// Traffic to a peer moved back to a more preferred transport.
        public static let deEscalated = Kind("de_escalated")
        /// A message from this node was queued for sending.
        public static let messageQueued = Kind("message_queued")
        /// The next hop acknowledged every chunk of a message from this node.
        public static let messageSent = Kind("message_sent")
        /// A message from this node reached its destination.
        public static let messageDelivered = Kind("message_delivered")
        /// A message from this node could not be sent; `reason` says why.
        public static let messageFailed = Kind("message_failed")
        /// A whole message arrived for this node.
        public static let messageReceived = Kind("message_received")
        /// An attempt to send a message from this node failed; it stays queued and is
        /// retried on the backoff schedule. `reason` says why.
        public static let messageRetrying = Kind("message_retrying")
        /// A delivery receipt was rejected (malformed, not signed by the message's
        /// destination, or for other content); `reason` says which.
        public static let receiptRejected = Kind("receipt_rejected")
        /// A destination got a route through a neighbour, or its route moved to
        /// another neighbour (`peer` is the destination; `reason` names the next hop
        /// and the hops).
        public static let routeLearned = Kind("route_learned")
        /// A destination lost its route (the neighbour it went through went away and
        /// no other neighbour offers one); messages for it wait.
        public static let routeLost = Kind("route_lost")
        /// This node handed a message it carries for another origin to the next hop
        /// (`peer` is the destination).
        public static let messageRelayed = Kind("message_relayed")
        /// A message was flooded (no route to its destination, or an emergency); its
        /// reason says to how many neighbours, or that the re-broadcast was suppressed.
        public static let messageFlooded = Kind("message_flooded")

        public init(from decoder: any Decoder) throws {
            name = try decoder.singleValueContainer().decode(String.self)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(name)
        }
    }

    /// What happened.
    public var kind: Kind
    /// The transport concerned.
    public var transport: String?
    /// The peer concerned (the remote of a link, the origin or destination of a message).
    public var peer: PeerID?
    /// The link concerned.
    public var link: LinkID?
    /// A transport address (a failed handshake's remote, a discovered hint's address).
    public var address: String?
    /// The transport traffic moved away from (escalations).
    public var from: String?
    /// The transport traffic moved to (escalations).
    public var to: String?
    /// Why, in one line.
    public var reason: String?
    /// The message concerned.
    public var messageID: MessageID?

    /// Creates an event.
    public init(
        _ kind: Kind,
        transport: String? = nil,
        peer: PeerID? = nil,
        link: LinkID? = nil,
        address: String? = nil,
        from: String? = nil,
        to: String? = nil,
        reason: String? = nil,
        messageID: MessageID? = nil
    ) {
        self.kind = kind
        self.transport = transport
        self.peer = peer
        self.link = link
        self.address = address
        self.from = from
        self.to = to
        self.reason = reason
        self.messageID = messageID
    }

    enum CodingKeys: String, CodingKey {
        case kind, transport, peer, link, address, from, to, reason
        case messageID = "message_id"
    }

    public var description: String {
        var parts = [kind.name]
        if let transport { parts.append("transport=\(transport)") }
        if let peer { parts.append("peer=\(peer.short)") }
        if let link { parts.append("\(link)") }
        if let address { parts.append("address=\(address)") }
        if let from, let to { parts.append("\(from) -> \(to)") }
        if let messageID { parts.append("message=\(messageID)") }
        if let reason { parts.append("reason: \(reason)") }
        return parts.joined(separator: " ")
    }
}

extension RouterEvent {
    static func transportStarted(_ transport: String, addresses: [String]) -> Self {
        Self(
            .transportStarted,
            transport: transport,
            address: addresses.isEmpty ? nil : addresses.joined(separator: ",")
        )
    }
    static func transportUnavailable(_ transport: String, reason: String) -> Self {
        Self(.transportUnavailable, transport: transport, reason: reason)
    }
    static func peerDiscovered(_ hint: PeerHint) -> Self {
        Self(.peerDiscovered, transport: hint.transport, peer: hint.peerID, address: hint.address)
    }
    static func peerLost(_ hint: PeerHint) -> Self {
        Self(.peerLost, transport: hint.transport, peer: hint.peerID, address: hint.address)
    }
    static func linkUp(peer: PeerID, transport: String, link: LinkID) -> Self {
        Self(.linkUp, transport: transport, peer: peer, link: link)
    }
    static func linkDown(peer: PeerID, transport: String, link: LinkID, reason: String) -> Self {
        Self(.linkDown, transport: transport, peer: peer, link: link, reason: reason)
    }
    static func handshakeFailed(transport: String, address: String, reason: String) -> Self {
        Self(.handshakeFailed, transport: transport, address: address, reason: reason)
    }
    static func malformedInput(transport: String, peer: PeerID?, reason: String) -> Self {
        Self(.malformedInput, transport: transport, peer: peer, reason: reason)
    }
    static func receiptRejected(transport: String, peer: PeerID, reason: String) -> Self {
        Self(.receiptRejected, transport: transport, peer: peer, reason: reason)
    }
    static func escalated(peer: PeerID, from: String, to: String, reason: String) -> Self {
        Self(.escalated, transport: to, peer: peer, from: from, to: to, reason: reason)
    }
    static func deEscalated(peer: PeerID, from: String, to: String) -> Self {
        Self(.deEscalated, transport: to, peer: peer, from: from, to: to)
    }
    static func route(_ kind: Kind, to destination: PeerID, transport: String? = nil, reason: String) -> Self {
        Self(kind, transport: transport, peer: destination, reason: reason)
    }

    static func message(
        _ kind: Kind,
        id: MessageID,
        peer: PeerID,
        transport: String? = nil,
        reason: String? = nil
    ) -> Self {
        Self(kind, transport: transport, peer: peer, reason: reason, messageID: id)
    }
}
