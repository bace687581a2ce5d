extension TextReport {
    /// `scmesh settings` without `--json`: one aligned line per setting, with where its
    /// value comes from (the config, or a run-time change kept across restarts) and
    /// how to go back to the config's values.
    public static func settings(_ reply: SettingsReply) -> String {
        let runtime = Set(reply.runtime ?? [])
        func maxPerHour(_ value: Int) -> String { value == 0 ? "no limit" : "\(value)" }
        func floor(_ value: Int) -> String { value == 0 ? "never" : "\(value) %" }
        func onOff(_ value: Bool) -> String { value ? "on" : "off" }
        func source(_ key: String, _ configured: String?) -> String {
            guard reply.runtime != nil else { return "" }
            guard runtime.contains(key) else { return "config" }
            return "run-time" + (configured.map { " (config: \($0))" } ?? "")
        }
        let config = reply.config
        var rows: [[String]] = [
            ["relay", onOff(reply.relayEnabled), source("relay_enabled", config.map { onOff($0.relayEnabled) })],
            [
                "relay max per hour", maxPerHour(reply.relayMaxPerHour),
                source("relay_max_per_hour", config.map { maxPerHour($0.relayMaxPerHour) }),
            ],
            [
                "relay neighbour share", "\(reply.relayNeighbourShare)",
                source("relay_neighbour_share", config.map { "\($0.relayNeighbourShare)" }),
            ],
            [
                "relay battery floor", floor(reply.relayBatteryFloorPercent),
                source("relay_battery_floor_percent", config.map { floor($0.relayBatteryFloorPercent) }),
            ],
        ]
        if let mode = reply.discoveryMode {
            rows.append([
                "discovery mode", escaped(mode), source("discovery_mode", config?.discoveryMode.map { escaped($0) }),
            ])
        } else {
            rows.append(["discovery mode", "- (no mDNS transport)", ""])
        }
        var lines: [String] = []
        if let changed = reply.changed { lines.append(escaped(changed)) }
        // Every column has a header: FROM only when the node says where values come from.
        let header = reply.runtime == nil ? ["SETTING", "VALUE"] : ["SETTING", "VALUE", "FROM"]
        lines.append(table([header] + rows.map { row in row.last == "" ? Array(row.dropLast()) : row }))
        if !runtime.isEmpty {
            lines.append("run-time changes are kept across restarts; scmesh settings --reset goes back to the config")
        }
        return lines.joined(separator: "\n")
    }
}
