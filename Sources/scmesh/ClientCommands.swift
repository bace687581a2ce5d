import ArgumentParser
import Foundation
import MeshCore
import MeshNode

/// `scmesh status`.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the running node's state.")

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    func run() async throws {
        try await callNode(
            ControlRequest(cmd: "status"), dataDirectory: dataDirectory.path, json: output.json, as: StatusReply.self,
            render: TextReport.status)
    }
}

/// `scmesh peers`.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "peers", abstract: "List peers with a live link.")

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    func run() async throws {
        try await callNode(
            ControlRequest(cmd: "peers"), dataDirectory: dataDirectory.path, json: output.json, as: PeersReply.self,
            render: TextReport.peers)
    }
}

/// `scmesh inbox`.
struct InboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "inbox", abstract: "Show messages received by the running node.")

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    @Option(help: "Only messages with a sequence number above this.")
    var after: Int?

    @Option(help: "At most this many (the newest).")
    var limit: Int?

    func run() async throws {
        try await callNode(
            ControlRequest(cmd: "inbox", after: after, limit: limit), dataDirectory: dataDirectory.path,
            json: output.json, as: InboxReply.self, render: TextReport.inbox)
    }
}

/// `scmesh send`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send a message through the running node; returns when the next hop acknowledged it.")

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    @Argument(help: "The destination's peer ID (64 hex characters).")
    var peerID: String

    @Argument(help: "The message text, or - to read the payload (any bytes) from standard input.")
    var text: String

    func run() async throws {
        let request: ControlRequest
        if text == "-" {
            let payload = FileHandle.standardInput.readDataToEndOfFile()
            request = ControlRequest(cmd: "send", peer: peerID, payloadBase64: payload.base64EncodedString())
        } else {
            request = ControlRequest(cmd: "send", peer: peerID, text: text)
        }
        try await callNode(
            request, dataDirectory: dataDirectory.path, json: output.json, as: SendReply.self, render: TextReport.sent)
    }
}

/// `scmesh identity`.
struct IdentityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity", abstract: "Print this node's peer ID and Ed25519 public key (creating the identity if the data dir has none).")

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    func run() async throws {
        try await reportingErrors {
            let identity = try LocalIdentity.loadOrCreate(dataDirectory: dataDirectory.path)
            if output.json {
                print(#"{"peer_id":"\#(identity.peerID.hex)","short":"\#(identity.peerID.short)","public_key":"\#(identity.publicKeyHex ?? "")"}"#)
            } else {
                // One line, so scripts can use $(scmesh identity); the peer ID is the
                // Ed25519 public key itself (docs/PROTOCOL.md B.1).
                print(identity.peerID.hex)
            }
        }
    }
}

/// `scmesh config`.
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Work with config files.", subcommands: [CheckCommand.self])

    /// `scmesh config check`.
    struct CheckCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Validate a config file and print the effective config (with environment and --set applied).")

        @Argument(help: "The config file (YAML or JSON).")
        var file: String

        @Option(name: .customLong("set"), help: ArgumentHelp("Override one config key (repeatable).", valueName: "key=value"))
        var overrides: [String] = []

        func run() async throws {
            try await reportingErrors {
                let configuration = try NodeConfiguration.load(
                    file: file, environment: ProcessInfo.processInfo.environment, overrides: overrides)
                print(try configuration.yaml(), terminator: "")
            }
        }
    }
}
