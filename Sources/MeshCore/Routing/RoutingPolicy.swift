/// What the router knows about one live, authenticated link when it picks a path.
public struct LinkCandidate: Sendable, Hashable {
    /// The link.
    public var linkID: LinkID
    /// Its transport's name.
    public var transport: String
    /// Its transport's configured priority (lower = preferred).
    public var priority: Int
    /// Its transport's capabilities.
    public var capabilities: TransportCapabilities
    /// Smoothed round-trip time, once measured.
    public var smoothedRTT: Duration?
    /// Failures (errors, ack timeouts) since the last success or pong.
    public var consecutiveFailures: Int

    /// Creates a candidate.
    public init(
        linkID: LinkID,
        transport: String,
        priority: Int,
        capabilities: TransportCapabilities,
        smoothedRTT: Duration?,
        consecutiveFailures: Int
    ) {
        self.linkID = linkID
        self.transport = transport
        self.priority = priority
        self.capabilities = capabilities
        self.smoothedRTT = smoothedRTT
        self.consecutiveFailures = consecutiveFailures
    }
}

/// Decides which link a frame goes out on, how long to wait for its hop
/// acknowledgement, and how often to escalate.
public protocol RoutingPolicy: Sendable {
    /// How many candidates one frame is tried on before the send fails.
    var maxAttempts: Int { get }
    /// Orders the live links to a peer for a frame of `payloadSize` bytes; the first
    /// is tried first, the next on error or timeout.
    func rank(_ candidates: [LinkCandidate], payloadSize: Int) -> [LinkCandidate]
    /// How long to wait for the hop acknowledgement of `bytes` sent on `candidate`.
    func ackTimeout(for candidate: LinkCandidate, bytes: Int) -> Duration
}

/// The default policy: configured priority first (lower wins), then health.
///
/// - Links with at least `degradeAfterFailures` consecutive failures rank after
///   every healthy link; a pong or a success makes them healthy again, which is how
///   traffic moves back up when a better transport recovers.
/// - Links whose transport cannot move the payload within the longest ack timeout
///   at its nominal bitrate (10 MB over BLE) rank after those that can.
/// - Among equals, lower smoothed RTT first.
/// - Ack timeout: `rttMultiplier` x smoothed RTT (1 s before the first sample) plus
///   twice the nominal transfer time, clamped to the configured bounds.
public struct PriorityEscalationPolicy: RoutingPolicy {
    /// The configuration in force.
    public var configuration: EscalationConfiguration

    /// Creates the policy.
    public init(configuration: EscalationConfiguration = .init()) {
        self.configuration = configuration
    }

    public var maxAttempts: Int { max(1, configuration.maxAttempts) }

    public func rank(_ candidates: [LinkCandidate], payloadSize: Int) -> [LinkCandidate] {
        let limit = Self.seconds(configuration.ackTimeoutMax)
        return candidates.sorted { a, b in
            let aDegraded = a.consecutiveFailures >= configuration.degradeAfterFailures
            let bDegraded = b.consecutiveFailures >= configuration.degradeAfterFailures
            if aDegraded != bDegraded { return !aDegraded }
            let aSlow = a.capabilities.transferTime(bytes: payloadSize) > limit
            let bSlow = b.capabilities.transferTime(bytes: payloadSize) > limit
            if aSlow != bSlow { return !aSlow }
            if a.priority != b.priority { return a.priority < b.priority }
            let aRTT = a.smoothedRTT.map(Self.seconds) ?? .infinity
            let bRTT = b.smoothedRTT.map(Self.seconds) ?? .infinity
            if aRTT != bRTT { return aRTT < bRTT }
            return a.linkID < b.linkID
        }
    }

    public func ackTimeout(for candidate: LinkCandidate, bytes: Int) -> Duration {
        let rtt = candidate.smoothedRTT.map(Self.seconds) ?? 1.0
        let transfer = candidate.capabilities.transferTime(bytes: bytes)
        let raw = configuration.rttMultiplier * rtt + 2 * (transfer.isFinite ? transfer : 0)
        let clamped = min(
            max(raw, Self.seconds(configuration.ackTimeoutMin)),
            Self.seconds(configuration.ackTimeoutMax)
        )
        return .milliseconds(Int64((clamped * 1000).rounded(.up)))
    }

    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
