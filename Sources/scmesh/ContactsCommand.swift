import ArgumentParser
import Foundation
import MeshCore
import MeshNode

/// `scmesh contacts`.
struct ContactsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts",
        abstract: "Manage the contact book: aliases for peer IDs, blocking, allow-list mode.",
        discussion: """
            An alias works wherever a peer ID does (send, history, outbox). Messages from a \
            blocked peer, and in allow-list mode from any peer that is not a contact, are \
            dropped on arrival (acknowledged, so the sender does not retry, and not stored).
            """,
        subcommands: [
            List.self, Add.self, Remove.self, Block.self, Unblock.self, AllowOnly.self, Rename.self, Note.self,
            Mute.self, Unmute.self,
        ],
        defaultSubcommand: List.self
    )

    /// Runs one contacts request and prints the book.
    static func call(_ request: ContactsRequest, node: NodeOptions, full: Bool = false) async throws {
        try await node.call(.contacts(request), as: ContactsReply.self, render: { TextReport.contacts($0, full: full) })
    }

    /// `scmesh contacts list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the contacts.")
        @OptionGroup var node: NodeOptions
        @OptionGroup var ids: FullIDsOption

        func run() async throws {
            try await ContactsCommand.call(.list, node: node, full: ids.full)
        }
    }

    /// `scmesh contacts add`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a contact: an alias for a peer ID."
        )
        @OptionGroup var node: NodeOptions
        @Option(help: "A free note.") var note: String?
        @Argument(help: "The alias (1 to 64 characters, unique, not a peer ID).") var alias: String
        @Argument(
            help: "The peer ID (64 hex characters, or the first 4 or more of a peer this node knows or heard from)."
        ) var peer: String

        func run() async throws {
            try await ContactsCommand.call(.add(alias: alias, peer: peer, note: note), node: node)
        }
    }

    /// `scmesh contacts remove`.
    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a contact.")
        @OptionGroup var node: NodeOptions
        @Argument(help: "The contact's alias (or peer ID).") var alias: String

        func run() async throws {
            try await ContactsCommand.call(.remove(alias), node: node)
        }
    }

    /// `scmesh contacts block`.
    struct Block: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "block",
            abstract: "Drop every message from a peer (a peer that is not a contact becomes one, as blocked-<8 hex>)."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "A peer ID or a contact's alias.") var peer: String

        func run() async throws {
            try await ContactsCommand.call(.block(peer: peer), node: node)
        }
    }

    /// `scmesh contacts unblock`.
    struct Unblock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unblock",
            abstract: "Accept messages from a blocked peer again."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "A peer ID or a contact's alias.") var peer: String

        func run() async throws {
            try await ContactsCommand.call(.unblock(peer: peer), node: node)
        }
    }

    /// `scmesh contacts allow-only`.
    struct AllowOnly: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "allow-only",
            abstract:
                "Allow-list mode: on accepts messages only from contacts; off from anyone not blocked (alias: allow).",
            aliases: ["allow"]
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "on or off.") var setting: String

        func validate() throws {
            guard ["on", "off"].contains(setting) else {
                throw ValidationError("allow-only takes on or off, got \"\(setting)\"")
            }
        }

        func run() async throws {
            try await ContactsCommand.call(.allowOnly(setting == "on"), node: node)
        }
    }
}
