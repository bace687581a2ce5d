/// Something the router did or saw, for users who want to know why a message took
/// the path it took. Subscribe with ``Router/events()``.
public enum RouterEvent: Sendable, Hashable, CustomStringConvertible {
    /// A transport started.
    case transportStarted(transport: String)
    /// A transport could not start; the node carries on without it.
    case transportUnavailable(transport: String, reason: String)
    /// Discovery reported a hint.
    case peerDiscovered(PeerHint)
    /// Discovery lost a hint.
    case peerLost(PeerHint)
    /// A link completed its handshake and is in use.
    case linkUp(peer: PeerID, transport: String, link: LinkID)
    /// A link ended.
    case linkDown(peer: PeerID, transport: String, link: LinkID, reason: String)
    /// A link's handshake failed.
    case handshakeFailed(transport: String, address: String, reason: String)
    /// A link delivered bytes that are not a valid frame; the link was closed.
    case malformedInput(transport: String, peer: PeerID?, reason: String)
    /// Traffic to a peer moved to a less preferred transport.
    case escalated(peer: PeerID, from: String, to: String, reason: String)
    /// Traffic to a peer moved back to a more preferred transport.
    case deEscalated(peer: PeerID, from: String, to: String)
    /// A whole message arrived for this node.
    case messageReceived(id: MessageID, from: PeerID, transport: String)

    public var description: String {
        switch self {
        case .transportStarted(let t): "transport \(t) started"
        case .transportUnavailable(let t, let reason): "transport \(t) unavailable: \(reason)"
        case .peerDiscovered(let hint): "discovered \(hint)"
        case .peerLost(let hint): "lost \(hint)"
        case .linkUp(let peer, let t, let link): "\(link) up to \(peer) over \(t)"
        case .linkDown(let peer, let t, let link, let reason): "\(link) to \(peer) over \(t) down: \(reason)"
        case .handshakeFailed(let t, let address, let reason): "handshake over \(t) with \(address) failed: \(reason)"
        case .malformedInput(let t, let peer, let reason): "malformed input over \(t) from \(peer.map(\.short) ?? "?"): \(reason)"
        case .escalated(let peer, let from, let to, let reason): "traffic to \(peer) escalated \(from) -> \(to): \(reason)"
        case .deEscalated(let peer, let from, let to): "traffic to \(peer) moved back \(from) -> \(to)"
        case .messageReceived(let id, let from, let t): "message \(id) from \(from) over \(t)"
        }
    }
}

/// A message that arrived for this node.
public struct InboundMessage: Sendable, Hashable, Codable {
    /// The message's ID.
    public var id: MessageID
    /// The node that created it.
    public var from: PeerID
    /// Its bytes.
    public var payload: [UInt8]
    /// The transport its last chunk arrived on.
    public var transport: String

    /// Creates a message record.
    public init(id: MessageID, from: PeerID, payload: [UInt8], transport: String) {
        self.id = id
        self.from = from
        self.payload = payload
        self.transport = transport
    }
}

/// Counters for one transport.
public struct TransportCounters: Sendable, Hashable, Codable {
    /// Data frames acknowledged by the next hop on this transport.
    public var framesSent = 0
    /// Data frames received on this transport.
    public var framesReceived = 0
    /// Payload bytes acknowledged by the next hop.
    public var bytesSent = 0
    /// Payload bytes received.
    public var bytesReceived = 0
    /// Frames that failed here (error or ack timeout) and were escalated.
    public var failures = 0
    /// Times traffic to a peer moved away from this transport to a worse one.
    public var escalationsFrom = 0
    /// Times traffic to a peer moved back to this transport from a worse one.
    public var deEscalationsTo = 0
    /// Links that completed a handshake.
    public var linksOpened = 0

    /// Zero counters.
    public init() {}
}

/// The router's counters.
public struct RouterStats: Sendable, Hashable, Codable {
    /// Messages this node originated and the next hop acknowledged.
    public var messagesSent = 0
    /// Messages delivered to this node's inbox.
    public var messagesReceived = 0
    /// Duplicate messages or chunks dropped.
    public var duplicatesDropped = 0
    /// Frames retried on another link after an error or timeout.
    public var retries = 0
    /// Ack timeouts.
    public var ackTimeouts = 0
    /// Path changes to a less preferred transport.
    public var escalations = 0
    /// Path changes back to a more preferred transport.
    public var deEscalations = 0
    /// Links that completed a handshake.
    public var linksOpened = 0
    /// Links that ended.
    public var linksClosed = 0
    /// Duplicate links (both ends dialled) closed by the tie-break.
    public var duplicateLinksClosed = 0
    /// Handshakes that failed.
    public var handshakeFailures = 0
    /// Handshake failures by reason code (`badSignature`, `peerMismatch`, ...).
    public var handshakeFailuresByReason: [String: Int] = [:]
    /// Messages whose end-to-end seal did not open, by reason code; never delivered.
    public var sealedMessagesRejected: [String: Int] = [:]
    /// Inputs rejected as malformed (bad packets, frames, or failed decryption), by code.
    public var malformedInputs: [String: Int] = [:]
    /// Inbound data frames refused (relay off, not for us, reassembly limits).
    public var framesRefused = 0
    /// Per transport.
    public var transports: [String: TransportCounters] = [:]

    /// Zero counters.
    public init() {}
}

/// One live link in a ``PeerSnapshot``.
public struct LinkSnapshot: Sendable, Hashable, Codable {
    /// The link's numeric ID.
    public var id: UInt64
    /// Its transport.
    public var transport: String
    /// Its transport's priority.
    public var priority: Int
    /// The remote address.
    public var address: String
    /// Smoothed RTT in milliseconds, once measured.
    public var rttMilliseconds: Double?
    /// Consecutive failures.
    public var consecutiveFailures: Int
    /// Frames waiting for their hop acknowledgement.
    public var inFlight: Int
    /// The link's own counters.
    public var framesSent: Int
    /// The link's own counters.
    public var framesReceived: Int
    /// Whether this node dialled the link.
    public var outbound: Bool
}

/// One peer with its live links.
public struct PeerSnapshot: Sendable, Hashable, Codable {
    /// The peer.
    public var peer: PeerID
    /// Its links, best first by the current policy.
    public var links: [LinkSnapshot]
    /// The transport of the last acknowledged send to it.
    public var activeTransport: String?
}

/// The state of a configured transport. Extensible: new states are not an API
/// break; encoded as its name (`"running"`).
public struct TransportState: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The state's stable name.
    public let name: String
    /// Creates a state.
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// `listen` was called; the transport has not reported its addresses yet.
    public static let starting = TransportState("starting")
    /// The transport is listening and discovering.
    public static let running = TransportState("running")
    /// The medium cannot be used here; `reason` says why.
    public static let unavailable = TransportState("unavailable")
    /// The transport was stopped.
    public static let stopped = TransportState("stopped")

    public init(from decoder: any Decoder) throws {
        name = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}

/// A configured transport and how it is doing.
public struct TransportStatus: Sendable, Hashable, Codable {
    /// The transport's name.
    public var name: String
    /// Its priority.
    public var priority: Int
    /// Starting, running, unavailable or stopped.
    public var state: TransportState
    /// Why it is unavailable, if it is.
    public var reason: String?
    /// Where it listens, in its own notation (empty until it runs, or when it listens nowhere).
    public var addresses: [String]

    /// Creates a status record.
    public init(name: String, priority: Int, state: TransportState, reason: String? = nil, addresses: [String] = []) {
        self.name = name
        self.priority = priority
        self.state = state
        self.reason = reason
        self.addresses = addresses
    }
}
