import ArgumentParser
import Foundation
import MeshCore
import MeshNode
import NIOCore

/// `scmesh status`.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show the running node's state.")

    @OptionGroup var node: NodeOptions

    func run() async throws {
        try await node.call(.status, as: StatusReply.self, render: TextReport.status)
    }
}

/// `scmesh peers`.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List peers with a live link (--known: every peer in the address ledger)."
    )

    @OptionGroup var node: NodeOptions

    @OptionGroup var ids: FullIDsOption

    @Flag(help: "List the address ledger instead: every known address of every peer, with its successes and failures.")
    var known = false

    func run() async throws {
        if known {
            try await node.call(
                .knownPeers,
                as: KnownPeersReply.self,
                render: { TextReport.knownPeers($0, full: ids.full) }
            )
            return
        }
        try await node.call(.peers, as: PeersReply.self, render: { TextReport.peers($0, full: ids.full) })
    }
}

/// `scmesh routes`.
struct RoutesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "routes",
        abstract: "Show the route table: destination, next hop, hops, transport, age, sequence."
    )

    @OptionGroup var node: NodeOptions

    @OptionGroup var ids: FullIDsOption

    func run() async throws {
        try await node.call(.routes, as: RoutesReply.self, render: { TextReport.routes($0, full: ids.full) })
    }
}

/// `scmesh send`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Queue a message in the running node and print its ID; with --wait, wait for the delivery receipt.",
        discussion: """
            The message is stored in the node's outbox before this returns and goes out as \
            soon as a route to the peer appears, until it expires. A retry with --id of a \
            message that is queued, sent or delivered changes nothing (no duplicate).
            """
    )

    @OptionGroup var node: NodeOptions

    @Flag(help: "Wait until the destination's signed delivery receipt arrives (or --timeout passes).")
    var wait = false

    @Option(
        help: ArgumentHelp(
            "How long --wait waits: seconds, or a duration such as 90s, 5m or 1h (default 60; implies --wait).",
            valueName: "duration"
        )
    )
    var timeout: String?

    @Option(
        help: ArgumentHelp(
            "The message ID to use (32 hex characters), e.g. to retry a message without duplicating it.",
            valueName: "hex"
        )
    )
    var id: String?

    @Option(
        help: ArgumentHelp(
            "How long the message may wait for delivery: seconds, or a duration such as 90s, 30m, 1h or 7d (default: store.default_expiry_seconds).",
            valueName: "duration"
        )
    )
    var expires: String?

    @Flag(
        help:
            "Send it as an emergency: flooded ahead of every queue, whatever the routes; at most flood.emergency_per_hour an hour (above that it fails and nothing is queued)."
    )
    var emergency = false

    @Flag(
        help:
            "With --emergency and no peer: a signed emergency broadcast to every node within reach (the emergency topic); within flood.emergency_per_hour."
    )
    var broadcast = false

    @Argument(help: "The destination: a peer ID, its unique start, or a contact's alias (with --broadcast: the text).")
    var peer: String

    @Argument(help: "The message text, or - to read the payload (any bytes) from standard input.")
    var text: String?

    func validate() throws {
        if broadcast {
            guard emergency else {
                throw ValidationError("--broadcast sends an emergency to everyone: give --emergency too")
            }
            guard text == nil else {
                throw ValidationError(
                    "--broadcast takes the text alone, no peer: scmesh send --emergency --broadcast TEXT"
                )
            }
            guard !wait, timeout == nil, id == nil, expires == nil else {
                throw ValidationError(
                    "--broadcast takes no --wait, --timeout, --id or --expires: a broadcast has no receipt"
                )
            }
        } else if text == nil {
            throw ValidationError("missing the message text: scmesh send PEER TEXT (or - for standard input)")
        }
    }

    func run() async throws {
        guard let text else { return try await sendBroadcast(peer) }
        var timeoutSeconds: Double?
        var expiresSeconds: Double?
        try await reportingErrors(json: node.json) {
            timeoutSeconds = try timeout.map { text throws(MeshError) in
                try DurationArgument.seconds(text, option: "--timeout")
            }
            expiresSeconds = try expires.map { text throws(MeshError) in
                try DurationArgument.seconds(text, option: "--expires")
            }
        }
        var request = SendRequest(
            peer: peer,
            id: id,
            expiresSeconds: expiresSeconds,
            wait: wait || timeout != nil ? true : nil,
            timeoutSeconds: timeoutSeconds
        )
        if emergency { request.emergency = true }
        if request.wait == true {
            // The ID is chosen here, so that it can be named before the wait and when
            // Ctrl-C ends it: the message stays queued in the node either way.
            let messageID = id ?? MessageID.random().hex
            request.id = messageID
            InterruptedWait.install(messageID: messageID, peer: peer, json: node.json)
            // On a terminal only: a script reading stderr gets the one line it had.
            if !node.json, isatty(STDERR_FILENO) == 1 {
                printError(
                    "sending message \(messageID) to \(peer); waiting for its delivery receipt (Ctrl-C stops the wait, not the message)"
                )
            }
        }
        // On a terminal, a large payload from standard input shows bytes and rate.
        var progress = TransferProgress()
        var bytes = 0
        var tooLarge: String?
        if text == "-" {
            // Standard input from a file: read and uploaded at once, no copy in memory.
            if let length = standardInputFileLength(),
                try await sendStandardInput(
                    request,
                    length: length,
                    dataDirectory: node.dataDirectory,
                    json: node.json
                )
            {
                return
            }
            var payload = ByteBuffer()
            try await reportingErrors(json: node.json) {
                // Reading stops at the node's limit: a larger payload is refused at once.
                let status = try await ControlClient(dataDirectory: node.dataDirectory).call(.status)
                let limit = try status.decode(StatusReply.self).maxMessageSize.map(InputLimit.message)
                payload = try readStandardInput(progress: &progress, limit: limit)
            }
            bytes = payload.readableBytes
            progress.finish(bytes, "read", suffix: "; handing it to the node")
            // Raw bytes over the HTTP API when the node serves one; base64 in JSON on
            // the control socket otherwise.
            if try await sendRaw(request, payload: payload, dataDirectory: node.dataDirectory, json: node.json) {
                return
            }
            request.payloadBase64 = Data(payload.readableBytesView).base64EncodedString()
            tooLarge = "the payload from standard input is \(bytes) bytes"
        } else {
            request.text = text
        }
        var handover = TransferProgress()
        try await node.call(
            .send(request),
            as: SendReply.self,
            tooLarge: tooLarge,
            render: { reply in
                handover.finish(bytes, "the node stored")
                // On stderr, so that $(scmesh send ...) still captures only the ID line.
                if let warning = reply.warning { printError("warning: \(warning)") }
                return TextReport.sent(reply)
            }
        )
    }
}

/// `scmesh identity`.
struct IdentityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Print this node's peer ID and Ed25519 public key (creating the identity if the data dir has none).",
        discussion: """
            A data directory that does not exist is refused (a typo would otherwise make a \
            new identity): pass --create to make it and a new identity.
            """
    )

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var output: JSONOption

    @Flag(help: "Create the data directory and a new identity when the directory does not exist.")
    var create = false

    func run() async throws {
        try await reportingErrors(json: output.json) {
            let path = dataDirectory.path
            guard create || FileManager.default.fileExists(atPath: path) else {
                throw MeshError(
                    .invalidArgument,
                    "no data directory at \(path): check the path, or pass --create to make it and a new identity there"
                )
            }
            let identity = try LocalIdentity.loadOrCreate(dataDirectory: path)
            if output.json {
                // `peer_id` is the former name of `peer` (deprecated).
                print(
                    #"{"ok":true,"peer":"\#(identity.peerID.hex)","peer_id":"\#(identity.peerID.hex)","short":"\#(identity.peerID.short)","public_key":"\#(identity.publicKeyHex ?? "")"}"#
                )
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
        commandName: "config",
        abstract: "Work with config files.",
        subcommands: [CheckCommand.self]
    )

    /// `scmesh config check`.
    struct CheckCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Validate a config file and print the effective config (with environment and --set applied).",
            discussion: """
                Without FILE it checks the config `scmesh run` would use: $SCMESH_CONFIG, \
                else the built-in Config/node.yaml.
                """
        )

        @Argument(help: "The config file (YAML or JSON; default: $SCMESH_CONFIG, else the built-in one).")
        var file: String?

        @Option(
            name: .customLong("set"),
            help: ArgumentHelp("Override one config key (repeatable).", valueName: "key=value")
        )
        var overrides: [String] = []

        func run() async throws {
            try await reportingErrors {
                let environment = ProcessInfo.processInfo.environment
                let check = try NodeConfiguration.checked(
                    file: file ?? environment["SCMESH_CONFIG"].flatMap { $0.isEmpty ? nil : $0 },
                    environment: environment,
                    overrides: overrides
                )
                print(try check.configuration.yaml(), terminator: "")
                // Valid but unable to work: one line each on stderr, after the YAML.
                for warning in check.warnings { printError("warning: \(warning)") }
            }
        }
    }
}
