import ArgumentParser
import MeshNode

/// `scmesh power`: the power state, the profile and the values in effect.
struct PowerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "power",
        abstract: "Show the power state, the power profile and the values it sets.",
        discussion: """
            The node reads power.supply_path (the kernel's power_supply tree) now and \
            every power.poll_seconds; with power.auto_adjust the profile sets the relay \
            budget, BLE scanning and advertising, and the keepalive. Each value says \
            where it comes from: profile, config, override (--override KEY=VALUE; keys: \
            relay_max_per_hour, ble_scan_interval_ms) or settings (changed with scmesh \
            settings since the profile last changed). --profile pins a profile, --auto \
            unpins it; overrides and the pin are kept across restarts.
            """
    )
    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption
    @Option(
        name: .customLong("override"),
        help: ArgumentHelp("Set a value whatever the profile says (kept across restarts).", valueName: "key=value")
    )
    var powerOverride: String?
    @Flag(help: "Drop every override: the profile's values apply again.")
    var clearOverrides = false
    @Option(help: ArgumentHelp("Pin a profile: maximum, high, standard, reduced or minimal.", valueName: "name"))
    var profile: String?
    @Flag(help: "Unpin the profile: the power state picks it again.")
    var auto = false

    func run() async throws {
        try await callNode(
            .power(
                PowerRequest(
                    powerOverride: powerOverride,
                    clearOverrides: clearOverrides ? true : nil,
                    profile: profile,
                    auto: auto ? true : nil
                )
            ),
            dataDirectory: dataDirectory.path,
            json: output.json,
            as: PowerReply.self,
            render: TextReport.power
        )
    }
}
