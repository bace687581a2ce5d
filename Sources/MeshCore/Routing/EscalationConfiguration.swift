/// How the router escalates between links: ack timeouts and retry limits.
///
/// `Codable` with the node's YAML keys (`escalation:` in `Config/node.yaml`):
/// `ack_timeout_min_ms`, `ack_timeout_max_ms` (integers, milliseconds),
/// `rtt_multiplier`, `max_attempts`, `degrade_after_failures`. A missing key takes its
/// default; an unknown key, a wrong type or a value out of range is a
/// `DecodingError` whose coding path ends with the key.
public struct EscalationConfiguration: Sendable, Hashable, Codable {
    /// The shortest hop-acknowledgement timeout.
    public var ackTimeoutMin: Duration
    /// The longest hop-acknowledgement timeout.
    public var ackTimeoutMax: Duration
    /// The timeout is `rttMultiplier` x smoothed RTT (plus transfer time), clamped.
    public var rttMultiplier: Double
    /// How many links one frame is tried on before the send fails.
    public var maxAttempts: Int
    /// Consecutive failures after which a link ranks below healthy links of any priority.
    public var degradeAfterFailures: Int

    /// Defaults: 250 ms ... 10 s, 4 x RTT, 4 attempts, degraded after 2 failures.
    public init(
        ackTimeoutMin: Duration = .milliseconds(250),
        ackTimeoutMax: Duration = .seconds(10),
        rttMultiplier: Double = 4,
        maxAttempts: Int = 4,
        degradeAfterFailures: Int = 2
    ) {
        self.ackTimeoutMin = ackTimeoutMin
        self.ackTimeoutMax = ackTimeoutMax
        self.rttMultiplier = rttMultiplier
        self.maxAttempts = maxAttempts
        self.degradeAfterFailures = degradeAfterFailures
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case ackTimeoutMinMs = "ack_timeout_min_ms"
        case ackTimeoutMaxMs = "ack_timeout_max_ms"
        case rttMultiplier = "rtt_multiplier"
        case maxAttempts = "max_attempts"
        case degradeAfterFailures = "degrade_after_failures"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self, section: "escalation")
        let defaults = Self()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let minMs = try container.decode(
            Int.self,
            forKey: .ackTimeoutMinMs,
            default: defaults.ackTimeoutMin.wholeMilliseconds
        )
        let maxMs = try container.decode(
            Int.self,
            forKey: .ackTimeoutMaxMs,
            default: defaults.ackTimeoutMax.wholeMilliseconds
        )
        rttMultiplier = try container.decode(Double.self, forKey: .rttMultiplier, default: defaults.rttMultiplier)
        maxAttempts = try container.decode(Int.self, forKey: .maxAttempts, default: defaults.maxAttempts)
        degradeAfterFailures = try container.decode(
            Int.self,
            forKey: .degradeAfterFailures,
            default: defaults.degradeAfterFailures
        )
        try container.check(minMs >= 1, .ackTimeoutMinMs, "must be at least 1, got \(minMs)")
        try container.check(
            maxMs >= minMs,
            .ackTimeoutMaxMs,
            "must not be below ack_timeout_min_ms (\(minMs)), got \(maxMs)"
        )
        try container.check(rttMultiplier > 0, .rttMultiplier, "must be above 0, got \(rttMultiplier)")
        try container.check(maxAttempts >= 1, .maxAttempts, "must be at least 1, got \(maxAttempts)")
        try container.check(
            degradeAfterFailures >= 1,
            .degradeAfterFailures,
            "must be at least 1, got \(degradeAfterFailures)"
        )
        ackTimeoutMin = .milliseconds(minMs)
        ackTimeoutMax = .milliseconds(maxMs)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(ackTimeoutMin.wholeMilliseconds, forKey: .ackTimeoutMinMs)
        try container.encode(ackTimeoutMax.wholeMilliseconds, forKey: .ackTimeoutMaxMs)
        try container.encode(rttMultiplier, forKey: .rttMultiplier)
        try container.encode(maxAttempts, forKey: .maxAttempts)
        try container.encode(degradeAfterFailures, forKey: .degradeAfterFailures)
    }
}
