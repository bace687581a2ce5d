import ArgumentParser
import MeshNode

/// `scmesh settings`: read or change the node's run-time settings.
struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Show or change the run-time settings: relay switch, relay budgets, discovery mode.",
        discussion: """
            Without options it prints the settings. Relay changes last until the node \
            stops; the discovery mode is saved in DATA-DIR/discovery_mode and holds across \
            restarts (delete the file to go back to the config's transports.mdns.discovery_mode).
            """
    )
    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var nodeWait: NodeWaitOption
    @OptionGroup var output: JSONOption
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

    func validate() throws {
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
            discoveryMode: discoveryMode
        )
        try await callNode(
            .settings(request),
            dataDirectory: dataDirectory.path,
            json: output.json,
            as: SettingsReply.self,
            render: TextReport.settings
        )
    }
}
