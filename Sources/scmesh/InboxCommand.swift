import ArgumentParser
import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP

/// `scmesh inbox`.
struct InboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox",
        abstract:
            "Show messages received by the running node; --follow waits for new ones, --save writes payloads to files.",
        discussion: """
            The listing carries each payload's size, the text of a short text message, and the start of \
            any other payload; --payloads asks for the payloads themselves (payload_base64 in --json). \
            --save downloads each payload raw from the node's HTTP API, streamed to disk (over the control \
            socket as base64 when the node serves no HTTP API). `scmesh inbox delete SEQ` deletes one message.
            """,
        subcommands: [InboxDeleteCommand.self]
    )

    @OptionGroup var dataDirectory: DataDirectoryOption
    @OptionGroup var nodeWait: NodeWaitOption
    @OptionGroup var output: JSONOption

    @Option(help: "Only messages with a sequence number above this.")
    var after: Int?

    @Option(help: "At most this many (the newest).")
    var limit: Int?

    @OptionGroup var ids: FullIDsOption

    @Flag(help: "Only messages not yet marked read (`scmesh read`).")
    var unread = false

    @Flag(
        help:
            "List each sender's messages together, in the order that sender sent them (the time its sealed envelope carries; the receive time when none), the senders in the order of their first message. Text only: --json lists in the order received, with sent_at."
    )
    var bySent = false

    func validate() throws {
        // 0 would list nothing and read as an empty inbox; in JSON it asks for the
        // counts alone (total_received).
        if bySent, follow {
            throw ValidationError("--by-sent orders one listing; it does not go with --follow")
        }
        if let limit, limit < 0 || limit == 0 && !output.json {
            throw ValidationError(
                "--limit takes the number of newest messages to show, 1 or more (0 only with --json, for the counts), got \(limit)"
            )
        }
    }

    @Flag(
        name: [.customShort("f"), .long],
        help: "After the messages so far, keep printing new ones as they arrive (until Ctrl-C)."
    )
    var follow = false

    @Option(
        help: ArgumentHelp(
            "Also write each message's payload, as received, to DIR/<message-id> (mode 0600; an existing file is left alone).",
            valueName: "dir"
        )
    )
    var save: String?

    @Flag(
        help:
            "List the payloads themselves: long texts whole, and payload_base64 in --json (the control socket's default)."
    )
    var payloads = false

    /// How often --follow asks the node for new messages.
    static let pollInterval: Duration = .milliseconds(250)

    func run() async throws {
        try await reportingErrors(json: output.json) {
            let saver = try save.map { try InboxSaver(directory: $0, dataDirectory: dataDirectory.path) }
            let client = ControlClient(dataDirectory: dataDirectory.path)
            var cursor = after ?? 0
            var first = true
            while true {
                // Without --payloads the listing leaves them out (a node older than that
                // option lists them anyway).
                let reply =
                    unread
                    ? try await client.call(
                        .inbox(
                            InboxRequest(
                                after: cursor,
                                limit: first ? limit : nil,
                                payloads: payloads ? nil : false,
                                unread: true
                            )
                        )
                    )
                    : try await client.inbox(after: cursor, limit: first ? limit : nil, payloads: payloads)
                let inbox = try reply.decode(InboxReply.self)
                if !follow {
                    print(output.json ? reply.line : TextReport.inbox(inbox, full: ids.full, bySent: bySent))
                } else {
                    for message in inbox.messages {
                        print(
                            output.json
                                ? try InboxReply.jsonLine(message) : TextReport.inboxMessage(message, full: ids.full)
                        )
                    }
                    if first, inbox.messages.isEmpty, !output.json {
                        printError("waiting for messages (Ctrl-C to stop)")
                    }
                }
                if let saver {
                    for saved in try await saver.save(inbox.messages) {
                        switch saved.outcome {
                        case .written: if !output.json { printError("saved #\(saved.seq) to \(saved.path)") }
                        case .existed: break
                        case .gone:
                            printError(
                                "#\(saved.seq) (\(saved.id.hex)) left the inbox before its payload could be saved (the inbox keeps store.inbox_capacity messages and store.inbox_max_bytes bytes); nothing was written for it"
                            )
                        }
                    }
                }
                fflush(nil)  // every stream: print is buffered when piped, and --follow must not sit on lines
                cursor = inbox.messages.map(\.seq).max() ?? cursor
                first = false
                guard follow else { return }
                try await Task.sleep(for: Self.pollInterval)
            }
        }
    }
}

extension InboxReply {
    /// One message as a JSON line (`scmesh inbox --follow --json`), its former field
    /// names included, as in the `inbox` reply.
    static func jsonLine(_ message: Message) throws -> String {
        String(decoding: try ControlJSON.encode(message), as: UTF8.self)
    }
}
