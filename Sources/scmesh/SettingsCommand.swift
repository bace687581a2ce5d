import ArgumentParser
import MeshNode

/// `scmesh settings`: read or change the node's run-time settings.
struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Show or change the run-time settings: relay switch, relay budgets, discovery mode.",
        discussion: """
            Without options it prints the settings and where each comes from. Changes are \
            saved in the data directory (DATA-DIR/runtime_settings.json, DATA-DIR/discovery_mode) \
            and hold across restarts; --reset goes back to the config's values.
            """
    )
    @OptionGroup var node: NodeOptions
    @Option(help: ArgumentHelp("Relay (and with it send and receive): on or off.", valueName: "on|off"))
    var relay: String?
    @Option(help: ArgumentHelp("Messages relayed for others per hour at most (0 = no limit).", valueName: "n"))
    var relayMaxPerHour: Int?
    @Option(help: ArgumentHelp("One neighbour's share of the hourly budget (above 0, at most 1).", valueName: "share"))
    var relayNeighbourShare: Double?
    @Option(
        help: ArgumentHelp("Below this battery charge (on battery) relay nothing; 0 = never.", valueName: "percent")
    )
    var relayBatteryFloor: Int?
    @Option(
        help: ArgumentHelp(
            "What mDNS reveals on the local network: normal (the peer ID), cautious (presence only) or paranoid (nothing; browse only).",
            valueName: "mode"
        )
    )
    var discoveryMode: String?
    @Flag(help: "Drop every run-time change: the config's values apply again, now and after restarts.")
    var reset = false

    func validate() throws {
        if reset,
            relay != nil || relayMaxPerHour != nil || relayNeighbourShare != nil || relayBatteryFloor != nil
                || discoveryMode != nil
        {
            throw ValidationError("--reset goes alone: it takes every setting back to the config's value")
        }
        if let relay, !["on", "off"].contains(relay) {
            throw ValidationError("--relay takes on or off, got \"\(relay)\"")
        }
        if let discoveryMode, !["normal", "cautious", "paranoid"].contains(discoveryMode) {
            throw ValidationError("--discovery-mode takes normal, cautious or paranoid, got \"\(discoveryMode)\"")
        }
    }

    func run() async throws {
        let request = SettingsRequest(
            relayEnabled: relay.map { $0 == "on" },
            relayMaxPerHour: relayMaxPerHour,
            relayNeighbourShare: relayNeighbourShare,
            relayBatteryFloorPercent: relayBatteryFloor,
            discoveryMode: discoveryMode,
            reset: reset ? true : nil
        )
        try await node.call(.settings(request), as: SettingsReply.self, render: TextReport.settings)
    }
}
