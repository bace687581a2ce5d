/// How the router redials hints whose link dropped or never came up.
public struct ReconnectConfiguration: Sendable, Hashable {
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
}

/// Everything the router can be told.
public struct RouterConfiguration: Sendable {
    /// Relay = messaging: when false the node neither sends nor receives.
    public var relayEnabled: Bool
    /// Ack timeouts and retry limits for the default policy.
    public var escalation: EscalationConfiguration
    /// Redial schedule.
    public var reconnect: ReconnectConfiguration
    /// Interval between keepalive pings on an idle link; a link silent for three
    /// intervals is closed as dead.
    public var keepaliveInterval: Duration
    /// How long a new link may take to complete its handshake.
    public var handshakeTimeout: Duration
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
    /// Hops a new message may take.
    public var defaultTTL: UInt8
    /// When messages are sealed end to end (needs a `MessageSealer`).
    public var sealing: SealingPolicy

    /// Defaults suitable for a node.
    public init(
        relayEnabled: Bool = true,
        escalation: EscalationConfiguration = .init(),
        reconnect: ReconnectConfiguration = .init(),
        keepaliveInterval: Duration = .seconds(30),
        handshakeTimeout: Duration = .seconds(10),
        maxMessageSize: Int = 16 << 20,  // Frame.defaultMaxMessageLength
        reassembly: ReassemblyLimits = .init(),
        dedupCapacity: Int = 65_536,
        windowPerLink: Int = 256,
        inboxCapacity: Int = 1024,
        defaultTTL: UInt8 = 7,
        sealing: SealingPolicy = .relayedOnly
    ) {
        self.relayEnabled = relayEnabled
        self.escalation = escalation
        self.reconnect = reconnect
        self.keepaliveInterval = keepaliveInterval
        self.handshakeTimeout = handshakeTimeout
        self.maxMessageSize = maxMessageSize
        self.reassembly = reassembly
        self.dedupCapacity = dedupCapacity
        self.windowPerLink = windowPerLink
        self.inboxCapacity = inboxCapacity
        self.defaultTTL = defaultTTL
        self.sealing = sealing
    }
}
