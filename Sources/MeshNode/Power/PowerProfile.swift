import MeshCore

/// The five power profiles of the seed app's AutoAdjust engine, from most to least
/// generous, and what each sets.
///
/// On external power (mains, charging, no battery) the profile is ``maximum``; on
/// battery the charge picks it: 80 % and above ``high``, 50 % ``standard``, 20 %
/// ``reduced``, below 20 % ``minimal`` (docs/configuration.md, `power:`).
public enum PowerProfile: String, Codable, Sendable, Hashable, CaseIterable {
    /// External power: everything at the config's values.
    case maximum
    /// Battery at 80 % or more.
    case high
    /// Battery at 50 % to 79 %.
    case standard
    /// Battery at 20 % to 49 %.
    case reduced
    /// Battery below 20 %, or a battery whose charge the kernel does not report.
    case minimal

    /// The profile for a power state.
    public init(_ state: PowerState) {
        if state.onExternalPower {
            self = .maximum
            return
        }
        switch state.batteryPercent ?? 0 {
        case 80...: self = .high
        case 50..<80: self = .standard
        case 20..<50: self = .reduced
        default: self = .minimal
        }
    }

    /// The most messages an hour the profile lets the node relay for others; nil for
    /// ``maximum``, which keeps the config's `relay.max_per_hour`.
    public var relayMaxPerHourCap: Int? {
        switch self {
        case .maximum: nil
        case .high: 2000
        case .standard: 1000
        case .reduced: 300
        case .minimal: 60
        }
    }

    /// The relay budget under this profile given the config's (0 = no limit): the
    /// profile's cap, or the config's value when that is lower; and which one it is.
    public func relayMaxPerHour(configured: Int) -> (value: Int, source: PowerReply.Source) {
        guard let cap = relayMaxPerHourCap else { return (configured, .config) }
        if configured > 0 && configured <= cap { return (configured, .config) }
        return (cap, .profile)
    }

    /// What the profile paces: BLE scanning (interval, 30 ms window), advertising and
    /// transmit power, the links' keepalive, mDNS browsing (a window every so often
    /// instead of all the time), the route summaries' base interval and the topic
    /// heartbeat; nil fields keep
    /// the configured values, and ``maximum`` keeps them all (docs/configuration.md,
    /// `power:`).
    public var pacing: TransportPacing {
        func pace(
            scan: Int,
            advertise: Int,
            txPower: Int? = nil,
            keepalive: Int? = nil,
            browse: Int? = nil,
            summaries: Int? = nil,
            heartbeat: Int? = nil
        ) -> TransportPacing {
            TransportPacing(
                scanInterval: .milliseconds(scan),
                scanWindow: .milliseconds(30),
                advertisingInterval: .milliseconds(advertise),
                transmitPowerDBm: txPower,
                keepaliveInterval: keepalive.map { .seconds($0) },
                browseInterval: browse.map { .seconds($0) },
                routeSummaryInterval: summaries.map { .seconds($0) },
                topicHeartbeatInterval: heartbeat.map { .seconds($0) }
            )
        }
        return switch self {
        case .maximum: .configured
        case .high: pace(scan: 200, advertise: 200)
        case .standard: pace(scan: 500, advertise: 500, keepalive: 60, summaries: 120, heartbeat: 2)
        case .reduced:
            pace(scan: 1000, advertise: 1000, keepalive: 120, browse: 120, summaries: 240, heartbeat: 5)
        case .minimal:
            pace(scan: 4000, advertise: 2000, txPower: -8, keepalive: 300, browse: 300, summaries: 600, heartbeat: 10)
        }
    }
}
