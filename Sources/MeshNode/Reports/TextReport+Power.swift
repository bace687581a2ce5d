extension TextReport {
    /// `scmesh power` without `--json`: the state, the profile, then one line per
    /// effective value with its source.
    public static func power(_ reply: PowerReply) -> String {
        let state = reply.state
        let battery: String =
            if let percent = state.batteryPercent {
                "\(percent) % (\(state.batteryStatus ?? "Unknown"))"
            } else if let status = state.batteryStatus {
                "charge unknown (\(status))"
            } else {
                "none"
            }
        let perHour = reply.effective.relayMaxPerHour
        return table([
            ["POWER", "VALUE"],
            ["battery", battery],
            ["mains", state.mainsOnline ? "online" : "offline"],
            [
                "profile",
                reply.profile.rawValue
                    + (reply.pinnedProfile != nil
                        ? " (pinned; scmesh power --auto unpins it)"
                        : reply.autoAdjust ? " (auto)" : " (auto_adjust off: not applied)"),
            ],
            [
                "relay max per hour",
                (perHour == 0 ? "no limit" : "\(perHour)") + " (\(reply.sources.relayMaxPerHour.rawValue))",
            ],
            [
                "BLE scan",
                reply.effective.bleScanIntervalMs.map { interval in
                    "every \(interval) ms" + (reply.effective.bleScanWindowMs.map { ", \($0) ms window" } ?? "")
                }.map { "\($0) (\(reply.sources.bleScanIntervalMs.rawValue))" } ?? "as configured",
            ],
            [
                "BLE advertising",
                reply.effective.bleAdvertisingIntervalMs.map { interval in
                    "every \(interval) ms"
                        + (reply.effective.bleTxPowerDbm.map { ", \($0) dBm" } ?? "") + " (profile)"
                } ?? "as configured",
            ],
            [
                "keepalive",
                reply.effective.keepaliveIntervalMs.map { "every \($0 / 1000) s (profile)" } ?? "as configured",
            ],
            [
                "mDNS browsing",
                reply.effective.mdnsBrowseIntervalMs.map { "30 s every \($0 / 1000) s (profile)" } ?? "continuous",
            ],
            [
                "route summaries",
                reply.effective.routeSummaryIntervalMs.map { "from every \($0 / 1000) s (profile)" } ?? "as configured",
            ],
            [
                "topic heartbeat",
                reply.effective.topicHeartbeatIntervalMs.map { "every \($0 / 1000) s (profile)" } ?? "as configured",
            ],
            ["supply path", reply.supplyPath],
            ["poll every", "\(reply.pollSeconds) s"],
        ])
    }
}
