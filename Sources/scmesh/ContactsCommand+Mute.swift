import ArgumentParser
import MeshNode

extension ContactsCommand {
    /// `scmesh contacts mute`.
    struct Mute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mute",
            abstract: "Raise no notification (notify.command, desktop) for a peer's messages; they still arrive."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "A peer ID, its unique start, or a contact's alias.") var peer: String

        func run() async throws {
            try await ContactsCommand.call(.mute(peer: peer), node: node)
        }
    }

    /// `scmesh contacts unmute`.
    struct Unmute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unmute",
            abstract: "Raise notifications for a muted peer's messages again."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "A peer ID, its unique start, or a contact's alias.") var peer: String

        func run() async throws {
            try await ContactsCommand.call(.unmute(peer: peer), node: node)
        }
    }
}
