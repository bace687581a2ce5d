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
    /// The wire protocol version the remote announced on this link.
    public var wireVersion: Int
    /// The optional features the remote announced on this link, by name
    /// (``Capabilities/names``); empty for a peer of the minimal profile.
    public var capabilities: [String]
}

/// One peer with its live links.
public struct PeerSnapshot: Sendable, Hashable, Codable {
    /// The peer.
    public var peer: PeerID
    /// Its links, best first by the current policy.
    public var links: [LinkSnapshot]
    /// The transport of the last acknowledged send to it.
    public var activeTransport: String?
    /// The wire protocol version of its best link.
    public var wireVersion: Int
    /// The optional features it announced on its best link, by name; empty for a peer
    /// of the minimal profile.
    public var capabilities: [String]
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
    /// The transport was switched off at run time (``Router/disableTransport(named:)``):
    /// it neither listens nor dials until it is enabled again.
    public static let disabled = TransportState("disabled")

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
    /// Starting, running, unavailable, stopped or disabled.
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
