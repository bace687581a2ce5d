import ArgumentParser
import MeshCore
import MeshNode

/// `scmesh conversation PEER`.
struct ConversationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conversation",
        abstract: "Show the messages both ways with one peer, oldest first, with their status and text."
    )

    @OptionGroup var node: NodeOptions

    @OptionGroup var ids: FullIDsOption

    @Option(help: "At most this many (the newest; default 100).")
    var limit: Int?

    @Argument(help: "The peer (a peer ID, its first 4 or more hex characters, or a contact's alias).")
    var peer: String

    func run() async throws {
        try await node.call(
            .conversation(MessageQuery(peer: peer, limit: limit)),
            as: ConversationReply.self,
            render: { TextReport.conversation($0, full: ids.full) }
        )
    }
}

/// `scmesh conversations`.
struct ConversationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conversations",
        abstract: "List the peers this node exchanged messages with, the most recent first, with unread counts."
    )

    @OptionGroup var node: NodeOptions
    @OptionGroup var ids: FullIDsOption

    func run() async throws {
        try await node.call(
            .conversations,
            as: ConversationsReply.self,
            render: { TextReport.conversations($0, full: ids.full) }
        )
    }
}

/// `scmesh read`.
struct ReadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Mark received messages read: by ID, or --all (of one --peer)."
    )

    @OptionGroup var node: NodeOptions

    @Flag(help: "Mark every received message read (of --peer only, when given).")
    var all = false

    @Option(help: "With --all: only this peer's messages (a peer ID, its start, or a contact's alias).")
    var peer: String?

    @Argument(help: "Message IDs (or their first 4 or more hex characters).")
    var ids: [String] = []

    func validate() throws {
        if all, !ids.isEmpty { throw ValidationError("give message IDs or --all, not both") }
        if !all, ids.isEmpty { throw ValidationError("give the message IDs to mark read, or --all") }
        if peer != nil, !all { throw ValidationError("--peer goes with --all") }
    }

    func run() async throws {
        try await node.call(
            .read(ReadRequest(ids: all ? nil : ids, all: all ? true : nil, peer: peer)),
            as: ReadReply.self,
            render: TextReport.read
        )
    }
}

/// `scmesh history clear [PEER]`.
struct HistoryClearCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear",
        abstract: "Delete the history (texts, statuses, traces) of one peer, or all of it; messages on their way stay."
    )

    @OptionGroup var node: NodeOptions

    @Argument(help: "Only this peer's messages (a peer ID, its start, or a contact's alias).")
    var peer: String?

    func run() async throws {
        try await node.call(.historyClear(peer: peer), as: ClearReply.self, render: TextReport.cleared)
    }
}

/// `scmesh inbox delete SEQ`.
struct InboxDeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete one received message from the inbox (its history entry stays, marked read)."
    )

    @OptionGroup var node: NodeOptions

    @Argument(help: "The message's sequence number, as `scmesh inbox` shows it (#SEQ).")
    var seq: Int?

    @Option(
        help: ArgumentHelp(
            "The message by its ID instead (or the first 4 or more hex characters of it, as `scmesh inbox` shows).",
            valueName: "message-id"
        )
    )
    var id: String?

    func validate() throws {
        if (seq == nil) == (id == nil) {
            throw ValidationError("name the message by its sequence number (SEQ) or by --id MESSAGE-ID, one of them")
        }
    }

    func run() async throws {
        try await node.call(.inboxDelete(seq: seq, id: id), as: ClearReply.self, render: TextReport.cleared)
    }
}
