/// The flooding fallback and the emergency class (`flood:` in `Config/node.yaml`,
/// docs/PROTOCOL.md §A.9–A.10).
///
/// `Codable` with the node's keys: `enabled`, `ttl`, `max_delay_ms`,
/// `suppress_after`, `after_failed_attempts`, `emergency_per_hour`,
/// `emergency_per_neighbour_per_hour`. A missing key takes its default; an unknown
/// key, a wrong type or a value out of range is a `DecodingError` whose coding path
/// ends with the key.
public struct FloodConfiguration: Sendable, Hashable, Codable {
    /// Whether a message with no route to its destination is flooded (`enabled`).
    /// Off, it waits in the queue for a route. Emergency messages are flooded either way.
    /// The library default is off; the node's `Config/node.yaml` turns it on.
    public var enabled: Bool
    /// The TTL a flood starts with (`ttl`, 1…255; 7 as in BitChat): a flooded message
    /// crosses at most `ttl − 1` relays.
    public var ttl: UInt8
    /// A relay waits a random delay in [0, this] before re-broadcasting a flood it
    /// took (`max_delay_ms`), so that it can overhear copies from its neighbours first.
    public var maxDelay: Duration
    /// A relay that was offered the same flood by this many distinct neighbours before
    /// its delay ran out suppresses its own re-broadcast (`suppress_after`, ≥ 1; 0 =
    /// never suppress). Meshtastic's rule, over point-to-point links.
    public var suppressAfter: Int
    /// A message that has a route but whose sends failed this many times (`after_failed_attempts`,
    /// ≥ 1; 0 = never) is flooded once: a route that keeps failing (e.g. a next hop
    /// refusing it as a `loop`) no longer holds it for ever.
    public var afterFailedAttempts: Int
    /// Emergency messages accepted from one origin per hour (`emergency_per_hour`,
    /// ≥ 1): this node's own sends above it fail with `.rateLimited`; a relay refuses
    /// other origins' emergencies above it.
    public var emergencyPerHour: Int
    /// Emergency messages a relay accepts from one neighbour per hour, whatever their
    /// origins (`emergency_per_neighbour_per_hour`, ≥ 1): origins are not authenticated
    /// to relays, the neighbour is.
    public var emergencyPerNeighbourPerHour: Int

    /// Defaults: flooding off in the library (the node turns it on), TTL 7, delay up to
    /// 200 ms, suppressed after 3 neighbours, after 4 failed attempts; 10 emergencies per
    /// origin and 60 per neighbour an hour.
    public init(
        enabled: Bool = false,
        ttl: UInt8 = 7,
        maxDelay: Duration = .milliseconds(200),
        suppressAfter: Int = 3,
        afterFailedAttempts: Int = 4,
        emergencyPerHour: Int = 10,
        emergencyPerNeighbourPerHour: Int = 60
    ) {
        self.enabled = enabled
        self.ttl = ttl
        self.maxDelay = maxDelay
        self.suppressAfter = suppressAfter
        self.afterFailedAttempts = afterFailedAttempts
        self.emergencyPerHour = emergencyPerHour
        self.emergencyPerNeighbourPerHour = emergencyPerNeighbourPerHour
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled
        case ttl
        case maxDelayMs = "max_delay_ms"
        case suppressAfter = "suppress_after"
        case afterFailedAttempts = "after_failed_attempts"
        case emergencyPerHour = "emergency_per_hour"
        case emergencyPerNeighbourPerHour = "emergency_per_neighbour_per_hour"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self, section: "flood")
        let defaults = Self()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        enabled = try container.decode(Bool.self, forKey: .enabled, default: defaults.enabled)
        let ttl = try container.decode(Int.self, forKey: .ttl, default: Int(defaults.ttl))
        try container.check((1...255).contains(ttl), .ttl, "must be between 1 and 255, got \(ttl)")
        self.ttl = UInt8(ttl)
        let delayMs = try container.decode(Int.self, forKey: .maxDelayMs, default: defaults.maxDelay.wholeMilliseconds)
        try container.check((0...60_000).contains(delayMs), .maxDelayMs, "must be between 0 and 60000, got \(delayMs)")
        maxDelay = .milliseconds(delayMs)
        suppressAfter = try container.decode(Int.self, forKey: .suppressAfter, default: defaults.suppressAfter)
        try container.check(suppressAfter >= 0, .suppressAfter, "must be 0 (never) or more, got \(suppressAfter)")
        afterFailedAttempts = try container.decode(
            Int.self,
            forKey: .afterFailedAttempts,
            default: defaults.afterFailedAttempts
        )
        try container.check(
            afterFailedAttempts >= 0,
            .afterFailedAttempts,
            "must be 0 (never) or more, got \(afterFailedAttempts)"
        )
        emergencyPerHour = try container.decode(Int.self, forKey: .emergencyPerHour, default: defaults.emergencyPerHour)
        try container.check(emergencyPerHour >= 1, .emergencyPerHour, "must be at least 1, got \(emergencyPerHour)")
        emergencyPerNeighbourPerHour = try container.decode(
            Int.self,
            forKey: .emergencyPerNeighbourPerHour,
            default: defaults.emergencyPerNeighbourPerHour
        )
        try container.check(
            emergencyPerNeighbourPerHour >= 1,
            .emergencyPerNeighbourPerHour,
            "must be at least 1, got \(emergencyPerNeighbourPerHour)"
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(enabled, forKey: .enabled)
        try container.encode(Int(ttl), forKey: .ttl)
        try container.encode(maxDelay.wholeMilliseconds, forKey: .maxDelayMs)
        try container.encode(suppressAfter, forKey: .suppressAfter)
        try container.encode(afterFailedAttempts, forKey: .afterFailedAttempts)
        try container.encode(emergencyPerHour, forKey: .emergencyPerHour)
        try container.encode(emergencyPerNeighbourPerHour, forKey: .emergencyPerNeighbourPerHour)
    }
}
