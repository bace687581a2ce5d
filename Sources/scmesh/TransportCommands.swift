import ArgumentParser
import MeshNode

/// `scmesh transports`: list the transports, or switch one off or on.
struct TransportsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transports",
        abstract: "List the transports with their state; disable or enable one at run time.",
        discussion: """
            A transport disabled here stops listening and its links close; it stays off \
            across restarts (saved in DATA-DIR/runtime_settings.json) until enabled again.
            """,
        subcommands: [List.self, Disable.self, Enable.self],
        defaultSubcommand: List.self
    )

    /// Runs one transports request and prints the transports.
    static func call(_ request: TransportsRequest, node: NodeOptions) async throws {
        try await node.call(.transports(request), as: TransportsReply.self, render: TextReport.transports)
    }

    /// `scmesh transports list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the transports.")
        @OptionGroup var node: NodeOptions

        func run() async throws {
            try await TransportsCommand.call(.list, node: node)
        }
    }

    /// `scmesh transports disable NAME`.
    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable",
            abstract: "Stop a transport now and keep it off across restarts."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "The transport's name (tcp, mdns, ble, ...).") var name: String

        func run() async throws {
            try await TransportsCommand.call(.disable(name), node: node)
        }
    }

    /// `scmesh transports enable NAME`.
    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable",
            abstract: "Start a disabled transport again."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "The transport's name.") var name: String

        func run() async throws {
            try await TransportsCommand.call(.enable(name), node: node)
        }
    }
}

/// `scmesh dial TRANSPORT ADDRESS`.
struct DialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dial",
        abstract: "Dial an address now; returns when the link is up (printing the peer) or says why it failed.",
        discussion: """
            The address is recorded in the address ledger (scmesh peers --known) and \
            redialled when the link drops. Example: scmesh dial tcp 192.0.2.7:7420
            """
    )
    @OptionGroup var node: NodeOptions
    @Option(help: ArgumentHelp("How long to wait for the link, in seconds (at most 300).", valueName: "seconds"))
    var timeout: Double = 15
    @Argument(help: "The transport (tcp, ...).") var transport: String
    @Argument(help: "The address in the transport's notation, e.g. 192.0.2.7:7420.") var address: String

    func run() async throws {
        try await node.call(
            .dial(DialRequest(transport: transport, address: address, timeoutSeconds: timeout)),
            as: DialReply.self,
            render: TextReport.dial
        )
    }
}
