import ArgumentParser
import MeshNode

extension ContactsCommand {
    /// `scmesh contacts rename OLD NEW`.
    struct Rename: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rename",
            abstract: "Give a contact another alias."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "The contact's alias now (or its peer ID).") var old: String
        @Argument(help: "The new alias (1 to 64 characters, unique, not a peer ID).") var new: String

        func run() async throws {
            try await ContactsCommand.call(.rename(alias: old, newAlias: new), node: node)
        }
    }

    /// `scmesh contacts note PEER TEXT`.
    struct Note: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "note",
            abstract: "Set a contact's note (\"\" removes it)."
        )
        @OptionGroup var node: NodeOptions
        @Argument(help: "The contact's alias or peer ID.") var peer: String
        @Argument(help: "The note.") var text: String

        func run() async throws {
            try await ContactsCommand.call(.note(peer: peer, note: text), node: node)
        }
    }
}
