import ArgumentParser
import Foundation
import MeshCore
import MeshNode

/// `scmesh history`: the listing (``HistoryListCommand``, the default) and `clear`.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract:
            "Show messages sent and received, with their status and text; --trace ID shows what happened to one message.",
        subcommands: [HistoryListCommand.self, HistoryClearCommand.self],
        defaultSubcommand: HistoryListCommand.self
    )
}

/// `scmesh history [list]`.
struct HistoryListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract:
            "Show messages sent and received, with their status and text (the default of `scmesh history`)."
    )

    @OptionGroup var node: NodeOptions

    @OptionGroup var ids: FullIDsOption

    @Option(help: "At most this many (the newest; default 100).")
    var limit: Int?

    @Option(
        help: ArgumentHelp(
            "Show the trace of one message (its ID, or the first 4 or more hex characters of it): every attempt, transport, status change and reason.",
            valueName: "message-id"
        )
    )
    var trace: String?

    @Option(help: ArgumentHelp("Only messages whose text contains this (letters in any case).", valueName: "text"))
    var grep: String?

    @Argument(help: "Only messages to or from this peer (a peer ID or a contact's alias).")
    var peer: String?

    func validate() throws {
        if trace != nil, peer != nil || limit != nil || grep != nil {
            throw ValidationError("--trace shows one message; it takes no PEER, --limit or --grep")
        }
    }

    func run() async throws {
        if let trace {
            try await node.call(.trace(id: trace), as: TraceReply.self, render: TextReport.trace)
        } else {
            try await node.call(
                .history(MessageQuery(peer: peer, limit: limit, grep: grep)),
                as: HistoryReply.self,
                render: { TextReport.history($0, full: ids.full) }
            )
        }
    }
}

/// `scmesh outbox`.
struct OutboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox",
        abstract: "Show the messages still on their way: for whom, since when, and what each waits for."
    )

    @OptionGroup var node: NodeOptions

    @OptionGroup var ids: FullIDsOption

    @Option(help: "At most this many (the oldest; default 1000).")
    var limit: Int?

    @Argument(help: "Only messages to this peer (a peer ID or a contact's alias).")
    var peer: String?

    func run() async throws {
        try await node.call(
            .outbox(MessageQuery(peer: peer, limit: limit)),
            as: OutboxReply.self,
            render: { TextReport.outbox($0, full: ids.full) }
        )
    }
}
