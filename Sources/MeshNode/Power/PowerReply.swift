import MeshCore

/// The reply to `power`: the power state as last read, the profile it maps to, and
/// the values in effect with where each comes from.
public struct PowerReply: Codable, Sendable, Hashable {
    /// Where an effective value comes from.
    public enum Source: String, Codable, Sendable, Hashable {
        /// The power profile's value.
        case profile
        /// The config file's value (the profile does not lower it, or `power.auto_adjust` is off).
        case config
        /// Set at run time with `scmesh settings` since the profile last changed.
        case settings
        /// Set with `scmesh power --override`; holds across profile changes.
        case override
    }

    /// The values a profile can set. A nil pacing value is the one the transport or
    /// the router was configured with (`transports.ble`,
    /// `router.keepalive_interval_ms`, `routing.summary_interval_ms`,
    /// `topics.heartbeat_interval_ms`; mDNS browses continuously).
    public struct Values: Codable, Sendable, Hashable {
        /// Messages relayed for others per hour at most (0 = no limit).
        public var relayMaxPerHour: Int
        /// The BLE scan interval.
        public var bleScanIntervalMs: Int?
        /// The BLE scan window.
        public var bleScanWindowMs: Int?
        /// The BLE advertising interval.
        public var bleAdvertisingIntervalMs: Int?
        /// The BLE advertising transmit power asked for, in dBm.
        public var bleTxPowerDbm: Int?
        /// The interval at which idle links are pinged.
        public var keepaliveIntervalMs: Int?
        /// How often mDNS browses (for a short window); nil: continuously.
        public var mdnsBrowseIntervalMs: Int?
        /// The route summaries' base interval.
        public var routeSummaryIntervalMs: Int?
        /// The topic gossip's heartbeat interval.
        public var topicHeartbeatIntervalMs: Int?

        /// The values: a relay budget and a pacing.
        public init(relayMaxPerHour: Int, pacing: TransportPacing = .configured) {
            self.relayMaxPerHour = relayMaxPerHour
            bleScanIntervalMs = pacing.scanInterval.map(\.wholeMilliseconds)
            bleScanWindowMs = pacing.scanWindow.map(\.wholeMilliseconds)
            bleAdvertisingIntervalMs = pacing.advertisingInterval.map(\.wholeMilliseconds)
            bleTxPowerDbm = pacing.transmitPowerDBm
            keepaliveIntervalMs = pacing.keepaliveInterval.map(\.wholeMilliseconds)
            mdnsBrowseIntervalMs = pacing.browseInterval.map(\.wholeMilliseconds)
            routeSummaryIntervalMs = pacing.routeSummaryInterval.map(\.wholeMilliseconds)
            topicHeartbeatIntervalMs = pacing.topicHeartbeatInterval.map(\.wholeMilliseconds)
        }
    }

    /// Where each of ``Values`` comes from.
    public struct Sources: Codable, Sendable, Hashable {
        /// Where ``Values/relayMaxPerHour`` comes from.
        public var relayMaxPerHour: Source
        /// Where ``Values/bleScanIntervalMs`` comes from.
        public var bleScanIntervalMs: Source
        /// Where the other pacing values come from (the profile, or the config when it
        /// leaves them as configured).
        public var pacing: Source
    }

    /// The power_supply tree read (`power.supply_path`).
    public var supplyPath: String
    /// Whether the node applies the profile (`power.auto_adjust`).
    public var autoAdjust: Bool
    /// Seconds between reads (`power.poll_seconds`).
    public var pollSeconds: Double
    /// The power state.
    public var state: PowerState
    /// The profile in effect: the pinned one, or the one the state maps to.
    public var profile: PowerProfile
    /// The profile pinned with `scmesh power --profile`; nil: the state picks it.
    public var pinnedProfile: PowerProfile?
    /// The overrides set with `scmesh power --override`, by key.
    public var overrides: [String: Int]
    /// The values in effect.
    public var effective: Values
    /// Where each effective value comes from.
    public var sources: Sources
}
