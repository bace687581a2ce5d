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
            ["supply path", reply.supplyPath],
            ["poll every", "\(reply.pollSeconds) s"],
        ])
    }
}
