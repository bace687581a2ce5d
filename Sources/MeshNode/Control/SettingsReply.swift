import Foundation
import MeshCore

/// The reply to `settings`: the settings a node changes at run time.
public struct SettingsReply: Codable, Sendable, Hashable {
    /// Whether the node relays, sends and receives (starts as `relay.enabled`).
    public var relayEnabled: Bool
    /// Messages relayed for others per hour at most (0 = no limit).
    public var relayMaxPerHour: Int
    /// One neighbour's share of the hourly budget.
    public var relayNeighbourShare: Double
    /// Below this battery charge (on battery) the node relays nothing; 0 = never.
    public var relayBatteryFloorPercent: Int
    /// What the mDNS transports reveal on the local network (`normal`, `cautious`,
    /// `paranoid`); absent when the node runs no mDNS transport.
    public var discoveryMode: String?
    /// The settings whose value comes from a run-time change (saved in the data
    /// directory, kept across restarts) rather than from the config, by name
    /// (`relay_enabled`, `relay_max_per_hour`, `relay_neighbour_share`,
    /// `relay_battery_floor_percent`, `discovery_mode`). Absent from replies of older nodes.
    public var runtime: [String]? = nil
    /// The config's values, which `reset` goes back to. Absent from replies of older nodes.
    public var config: Values? = nil
    /// What the command changed, in one line (with `reset`).
    public var changed: String? = nil

    /// The values of the settings (the config's, in ``config``).
    public struct Values: Codable, Sendable, Hashable {
        /// `relay.enabled`.
        public var relayEnabled: Bool
        /// `relay.max_per_hour`.
        public var relayMaxPerHour: Int
        /// `relay.neighbour_share`.
        public var relayNeighbourShare: Double
        /// `relay.battery_floor_percent`.
        public var relayBatteryFloorPercent: Int
        /// The mDNS transports' `discovery_mode`; absent without an mDNS transport.
        public var discoveryMode: String?

        /// Creates the values.
        public init(relayEnabled: Bool, limits: RelayLimits, discoveryMode: String?) {
            self.relayEnabled = relayEnabled
            relayMaxPerHour = limits.maxPerHour
            relayNeighbourShare = limits.neighbourShare
            relayBatteryFloorPercent = limits.batteryFloorPercent
            self.discoveryMode = discoveryMode
        }
    }

    /// Creates a reply.
    public init(relayEnabled: Bool, limits: RelayLimits, discoveryMode: String? = nil) {
        self.relayEnabled = relayEnabled
        relayMaxPerHour = limits.maxPerHour
        relayNeighbourShare = limits.neighbourShare
        relayBatteryFloorPercent = limits.batteryFloorPercent
        self.discoveryMode = discoveryMode
    }
}
