import ArgumentParser
import MeshNode

/// `scmesh`: run an SCMesh node and talk to it.
@main
struct SCMeshCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scmesh",
        abstract: "Run an SCMesh mesh-messaging node and talk to it.",
        discussion: """
            The data directory (--data-dir) defaults to $SCMESH_DATA_DIR, else \
            $XDG_DATA_HOME/scmesh, else ~/.local/share/scmesh. Shell completions: \
            scmesh --generate-completion-script bash|zsh|fish.
            """,
        version: SCMeshVersion.description,
        subcommands: [
            RunCommand.self, StatusCommand.self, PeersCommand.self, RoutesCommand.self, SendCommand.self,
            InboxCommand.self,
            HistoryCommand.self, OutboxCommand.self, ContactsCommand.self, InviteCommand.self, InvitesCommand.self,
            JoinCommand.self,
            ConfigCommand.self,
            IdentityCommand.self, SubscribeCommand.self, UnsubscribeCommand.self, TopicsCommand.self,
            PublishCommand.self,
            DashboardCommand.self, SettingsCommand.self, PowerCommand.self, EventsCommand.self,
            TransportsCommand.self, DialCommand.self,
            ConversationCommand.self, ConversationsCommand.self, ReadCommand.self,
        ]
    )
}
