/// What a node spends on relaying for others (`relay:` in `Config/node.yaml`, beside
/// `enabled`): an hourly budget, each neighbour's share of it, and a battery floor.
///
/// Only messages relayed for other nodes count; this node's own messages, messages to
/// it and receipts travelling back never do. A message refused for a budget is not
/// acknowledged, so the neighbour keeps custody and tries again later (docs/PROTOCOL.md
/// §A.6); each refusal is counted in ``RouterStats/relayRefused`` by reason
/// (`budget`, `neighbourShare`, `batteryLow`).
public struct RelayLimits: Sendable, Hashable {
    /// Messages relayed for others per hour at most (`relay.max_per_hour`); 0 = no
    /// limit. The budget refills continuously (a token bucket of this depth refilled at
    /// this rate per hour), so a quiet hour does not allow a burst of two hours.
    public var maxPerHour: Int
    /// The share of ``maxPerHour`` one neighbour may use (`relay.neighbour_share`,
    /// 0 < share ≤ 1): one flooder cannot spend the budget for everyone else.
    public var neighbourShare: Double
    /// On battery power below this charge, in percent, the node relays nothing
    /// (`relay.battery_floor_percent`, 0…100; 0 = never). Ignored on mains power and
    /// where there is no battery. Its own messages still go.
    public var batteryFloorPercent: Int

    /// Defaults: no hourly limit, a neighbour may use a quarter of a limit when one is
    /// set, battery floor 20 %. (`Config/node.yaml` sets a limit.)
    public init(maxPerHour: Int = 0, neighbourShare: Double = 0.25, batteryFloorPercent: Int = 20) {
        self.maxPerHour = maxPerHour
        self.neighbourShare = neighbourShare
        self.batteryFloorPercent = batteryFloorPercent
    }

    /// The most one neighbour may have relayed per hour: `maxPerHour × neighbourShare`,
    /// at least 1; nil when there is no limit.
    var perNeighbour: Int? {
        maxPerHour > 0 ? max(1, Int((Double(maxPerHour) * neighbourShare).rounded(.down))) : nil
    }
}

/// Reads the battery for the relay's battery floor. The node reads
/// `/sys/class/power_supply`; tests pass a fixed value.
public protocol BatteryGauge: Sendable {
    /// The battery's charge in percent when the machine runs on battery, or nil when it
    /// is on mains power or has no battery (then the floor does not apply).
    func dischargingPercent() -> Int?
}
