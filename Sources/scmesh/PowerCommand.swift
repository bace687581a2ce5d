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
            budget. Each value says where it comes from: profile, config or settings \
            (changed with scmesh settings since the profile last changed).
            """
    )
    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    func run() async throws {
        try await callNode(
            .power,
            dataDirectory: dataDirectory.path,
            json: output.json,
            as: PowerReply.self,
            render: TextReport.power
        )
    }
}
