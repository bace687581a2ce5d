extension TextReport {
    /// `scmesh settings` without `--json`: one aligned line per setting.
    public static func settings(_ reply: SettingsReply) -> String {
        var rows: [[String]] = [
            ["relay", reply.relayEnabled ? "on" : "off"],
            ["relay max per hour", reply.relayMaxPerHour == 0 ? "no limit" : "\(reply.relayMaxPerHour)"],
            ["relay neighbour share", "\(reply.relayNeighbourShare)"],
            [
                "relay battery floor",
                reply.relayBatteryFloorPercent == 0 ? "never" : "\(reply.relayBatteryFloorPercent) %",
            ],
        ]
        rows.append(["discovery mode", reply.discoveryMode ?? "- (no mDNS transport)"])
        return table(rows)
    }
}
