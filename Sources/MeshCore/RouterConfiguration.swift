/// How the router redials hints whose link dropped or never came up.
///
/// `Codable` with the node's YAML keys (`reconnect:` in `Config/node.yaml`):
/// `initial_delay_ms`, `max_delay_ms` (integers, milliseconds) and `jitter`. A missing
/// key takes its default; an unknown key, a wrong type or a value out of range is a
/// `DecodingError` whose coding path ends with the key.
public struct ReconnectConfiguration: Sendable, Hashable, Codable {
    /// The first delay after a failed dial or a dropped link.
    public var initialDelay: Duration
    /// The longest delay; each failure doubles the delay up to this.
    public var maxDelay: Duration
    /// Random spread applied to each delay, as a fraction (0.2 = ±20 %).
    public var jitter: Double

    /// Defaults: the seed host app's schedule 1 → 2 → 4 → 8 → 16 → 30 s, ±20 % jitter.
    public init(initialDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(30), jitter: Double = 0.2) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.jitter = jitter
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case initialDelayMs = "initial_delay_ms"
        case maxDelayMs = "max_delay_ms"
        case jitter
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self, section: "reconnect")
        let defaults = Self()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let initialMs = try container.decode(
            Int.self,
            forKey: .initialDelayMs,
            default: defaults.initialDelay.wholeMilliseconds
        )
        let maxMs = try container.decode(Int.self, forKey: .maxDelayMs, default: defaults.maxDelay.wholeMilliseconds)
        jitter = try container.decode(Double.self, forKey: .jitter, default: defaults.jitter)
        try container.check(initialMs >= 1, .initialDelayMs, "must be at least 1, got \(initialMs)")
        try container.check(
            maxMs >= initialMs,
            .maxDelayMs,
            "must not be below initial_delay_ms (\(initialMs)), got \(maxMs)"
        )
        try container.check((0...1).contains(jitter), .jitter, "must be between 0 and 1, got \(jitter)")
        initialDelay = .milliseconds(initialMs)
        maxDelay = .milliseconds(maxMs)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(initialDelay.wholeMilliseconds, forKey: .initialDelayMs)
        try container.encode(maxDelay.wholeMilliseconds, forKey: .maxDelayMs)
        try container.encode(jitter, forKey: .jitter)
    }

    /// The delay before attempt `attempt` (0-based), without jitter.
    public func delay(attempt: Int) -> Duration {
        var delay = initialDelay
        for _ in 0..<min(attempt, 32) {
            delay *= 2
            if delay >= maxDelay { return maxDelay }
        }
        return min(delay, maxDelay)
    }

    /// The delay before attempt `attempt`, with jitter applied.
    public func jitteredDelay(attempt: Int) -> Duration {
        let base = delay(attempt: attempt)
        guard jitter > 0 else { return base }
        let factor = Double.random(in: (1 - jitter)...(1 + jitter))
        return base * factor
    }
}

/// When the router seals messages end to end with its `MessageSealer`.
public enum SealingPolicy: String, Sendable, Hashable, Codable {
    /// Every message to another node is sealed in an envelope.
    case always
    /// Only messages that a relay carries are sealed; a message going straight to its
    /// destination over an authenticated (Noise) link is already end-to-end protected
    /// and skips the per-message public-key work. Unsealed messages are accepted only
    /// from the link whose authenticated remote is their origin.
    case relayedOnly = "relayed_only"

    /// Decodes `relayed_only` or `always`; anything else is a `DecodingError` that
    /// lists both.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let policy = Self(rawValue: text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "expected relayed_only or always, got \"\(text)\""
            )
        }
        self = policy
    }
}

/// Everything the router can be told.
///
/// `Codable` with the keys of the node's config file (the top level of
/// `Config/node.yaml` but for `node:` and `transports:`), so the node decodes it
/// directly:
///
/// | key | property |
/// |---|---|
/// | `relay.enabled` | ``relayEnabled`` |
/// | `relay.max_per_hour`, `relay.neighbour_share`, `relay.battery_floor_percent` | ``relayLimits`` (``RelayLimits``) |
/// | `escalation` | ``escalation`` (``EscalationConfiguration``) |
/// | `reconnect` | ``reconnect`` (``ReconnectConfiguration``) |
/// | `keepalive_interval_ms` | ``keepaliveInterval`` |
/// | `link_write_stall_timeout_ms` | ``linkWriteStallTimeout`` |
/// | `handshake_timeout_ms` | ``handshakeTimeout`` |
/// | `max_unauthenticated_links` | ``maxUnauthenticatedLinks`` |
/// | `sealing` | ``sealing`` (`relayed_only` or `always`) |
/// | `max_message_size` | ``maxMessageSize`` |
/// | `reassembly` | ``reassembly`` (``ReassemblyLimits``) |
/// | `dedup_capacity` | ``dedupCapacity`` |
/// | `window_per_link` | ``windowPerLink`` |
/// | `inbox_capacity` | ``inboxCapacity`` |
/// | `default_ttl` | ``defaultTTL`` |
/// | `flood` | ``flood`` (``FloodConfiguration``) |
/// | `features` | ``features`` (one boolean per ``Capabilities/named`` feature) |
///
/// Durations are integers in milliseconds. A missing key takes the default of
/// ``init(relayEnabled:escalation:reconnect:keepaliveInterval:linkWriteStallTimeout:handshakeTimeout:maxUnauthenticatedLinks:maxMessageSize:reassembly:dedupCapacity:windowPerLink:inboxCapacity:defaultTTL:sealing:routing:relayLimits:flood:)``
/// (so `relay.enabled` missing means relay on: the node's fail-safe default is the
/// node's). An unknown key, at any level, a wrong type or a value out of range is a
/// `DecodingError` whose coding path ends with the key.
public struct RouterConfiguration: Sendable, Hashable, Codable {
    /// Relay = messaging: when false the node neither sends nor receives.
    public var relayEnabled: Bool
    /// The relay's budgets: `relay.max_per_hour`, `relay.neighbour_share`,
    /// `relay.battery_floor_percent`.
    public var relayLimits: RelayLimits
    /// Ack timeouts and retry limits for the default policy.
    public var escalation: EscalationConfiguration
    /// Redial schedule.
    public var reconnect: ReconnectConfiguration
    /// Interval between keepalive pings on an idle link; a link silent for three
    /// intervals is closed as dead.
    public var keepaliveInterval: Duration
    /// How long a write to a link may wait, with no write to that link finishing, before
    /// the link is closed: its remote stopped reading (or is wedged), and every send to it
    /// would otherwise wait for ever. Once a write has waited half of this (or the
    /// longest ack timeout, whichever is shorter) the link ranks after healthy ones, so
    /// new frames go out on another link; when it closes, the frames waiting on it fail
    /// with `.linkClosed` and escalate to another link like any link failure.
    public var linkWriteStallTimeout: Duration
    /// How long a new link may take to complete its handshake.
    public var handshakeTimeout: Duration
    /// Inbound links still in their handshake, over every transport together. When a
    /// new one arrives with the budget full, the oldest is closed (not the newcomer),
    /// so strangers holding idle connections cannot lock honest peers out.
    public var maxUnauthenticatedLinks: Int
    /// Largest message `send(to:payload:)` accepts and the decoder admits.
    public var maxMessageSize: Int
    /// Bounds on multi-chunk reassembly.
    public var reassembly: ReassemblyLimits
    /// Message IDs remembered to drop duplicates.
    public var dedupCapacity: Int
    /// Frames in flight (sent, not yet acknowledged) per link.
    public var windowPerLink: Int
    /// Inbound messages buffered for the application before links are slowed down.
    public var inboxCapacity: Int
    /// Hops a new message may take (32 by default: several times the longest route,
    /// `routing.max_hops` 7, so a copy that detours while routes change still arrives;
    /// loops are refused by the relay rules whatever the TTL).
    public var defaultTTL: UInt8
    /// When messages are sealed end to end (needs a `MessageSealer`).
    public var sealing: SealingPolicy
    /// Route announcements and the route table (`routing:`).
    public var routing: RoutingConfiguration
    /// The flooding fallback and the emergency class (`flood:`).
    public var flood: FloodConfiguration
    /// The optional protocol features this node speaks and announces in the handshake
    /// (`features:`, all on by default). A feature switched off is neither sent nor
    /// taken in on any link; messages still flow (docs/PROTOCOL.md §A.11). Dependencies
    /// apply: ``Capabilities/routeSync`` needs ``Capabilities/routing``,
    /// ``Capabilities/emergency`` needs ``Capabilities/flooding``.
    public var features: Capabilities

    /// Defaults suitable for a node.
    public init(
        relayEnabled: Bool = true,
        escalation: EscalationConfiguration = .init(),
        reconnect: ReconnectConfiguration = .init(),
        keepaliveInterval: Duration = .seconds(30),
        linkWriteStallTimeout: Duration = .seconds(30),
        handshakeTimeout: Duration = .seconds(10),
        maxUnauthenticatedLinks: Int = 64,
        maxMessageSize: Int = RouterConfiguration.defaultMaxMessageSize,
        reassembly: ReassemblyLimits = .init(),
        dedupCapacity: Int = 65_536,
        windowPerLink: Int = 256,
        inboxCapacity: Int = 1024,
        defaultTTL: UInt8 = 32,
        sealing: SealingPolicy = .relayedOnly,
        routing: RoutingConfiguration = .init(),
        relayLimits: RelayLimits = .init(),
        flood: FloodConfiguration = .init(),
        features: Capabilities = .all
    ) {
        self.relayEnabled = relayEnabled
        self.relayLimits = relayLimits
        self.escalation = escalation
        self.reconnect = reconnect
        self.keepaliveInterval = keepaliveInterval
        self.linkWriteStallTimeout = linkWriteStallTimeout
        self.handshakeTimeout = handshakeTimeout
        self.maxUnauthenticatedLinks = maxUnauthenticatedLinks
        self.maxMessageSize = maxMessageSize
        self.reassembly = reassembly
        self.dedupCapacity = dedupCapacity
        self.windowPerLink = windowPerLink
        self.inboxCapacity = inboxCapacity
        self.defaultTTL = defaultTTL
        self.sealing = sealing
        self.routing = routing
        self.flood = flood
        self.features = features
    }
}
