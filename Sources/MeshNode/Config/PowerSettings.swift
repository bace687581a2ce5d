extension NodeConfiguration {
    /// `power:` — power-aware operation: where the node reads its power state, how
    /// often, and whether it applies the power profile (``PowerProfile``) to its
    /// settings.
    public struct PowerSettings: Sendable, Codable, Hashable {
        /// The kernel's power_supply tree.
        public var supplyPath: String = "/sys/class/power_supply"
        /// Seconds between reads of the tree.
        public var pollSeconds: Double = 60
        /// Whether the profile sets the relay budget; false keeps the config's values.
        public var autoAdjust: Bool = true

        /// Built-in defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case supplyPath = "supply_path"
            case pollSeconds = "poll_seconds"
            case autoAdjust = "auto_adjust"
        }

        /// Decodes and checks every key; a bad value names its key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            supplyPath = try container.decode(String.self, forKey: .supplyPath)
            try require(!supplyPath.isEmpty, .supplyPath, in: container, "must be a directory path, got \"\"")
            pollSeconds = try container.decode(Double.self, forKey: .pollSeconds)
            try require(
                pollSeconds >= 0.05 && pollSeconds <= 86_400,
                .pollSeconds,
                in: container,
                "must be 0.05 to 86400 (seconds), got \(pollSeconds)"
            )
            autoAdjust = try container.decode(Bool.self, forKey: .autoAdjust)
        }

        /// Encodes every key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(supplyPath, forKey: .supplyPath)
            try container.encode(pollSeconds, forKey: .pollSeconds)
            try container.encode(autoAdjust, forKey: .autoAdjust)
        }
    }
}
