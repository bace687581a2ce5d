import ArgumentParser
import MeshNode

extension ContactsCommand {
    /// `scmesh contacts mute`.
    struct Mute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mute",
            abstract: "Raise no notification (notify.command, desktop) for a peer's messages; they still arrive."
        )
        @OptionGroup var dataDirectory: DataDirectoryOption
        @OptionGroup var nodeWait: NodeWaitOption
        @OptionGroup var output: JSONOption
        @Argument(help: "A peer ID, its unique start, or a contact's alias.") var peer: String

        func run() async throws {
            try await ContactsCommand.call(.mute(peer: peer), dataDirectory: dataDirectory.path, json: output.json)
        }
    }

    /// `scmesh contacts unmute`.
    struct Unmute: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unmute",
            abstract: "Raise notifications for a muted peer's messages again."
        )
        @OptionGroup var dataDirectory: DataDirectoryOption
        @OptionGroup var nodeWait: NodeWaitOption
        @OptionGroup var output: JSONOption
        @Argument(help: "A peer ID, its unique start, or a contact's alias.") var peer: String

        func run() async throws {
            try await ContactsCommand.call(.unmute(peer: peer), dataDirectory: dataDirectory.path, json: output.json)
        }
    }
}
