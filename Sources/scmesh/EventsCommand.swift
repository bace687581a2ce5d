import ArgumentParser
import Foundation
import MeshCore
import MeshNode

/// `scmesh events`: the router's recent events, and with `--follow` new ones as they happen.
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Show the node's recent events (links, messages, routes); --follow waits for new ones.",
        discussion: """
            The same events, numbered the same way, as the HTTP API's event stream \
            (GET /api/v1/events). Ids grow by one per event for the node's lifetime; \
            --after ID resumes after the last one seen. The node holds the newest 4096: \
            a resume from further back says how many were missed. With --json, one JSON \
            object per line.
            """
    )

    @OptionGroup var node: NodeOptions
    @OptionGroup var ids: FullIDsOption

    @Option(help: ArgumentHelp("Only events after this id (default: the newest --limit).", valueName: "id"))
    var after: Int?

    @Option(help: "At most this many events at first (1 to 4096, default 100).")
    var limit: Int = 100

    @Flag(
        name: [.customShort("f"), .long],
        help: "After the events so far, keep printing new ones as they happen (until Ctrl-C)."
    )
    var follow = false

    /// How often --follow asks the node for new events.
    static let pollInterval: Duration = .milliseconds(250)

    func validate() throws {
        guard (1...4096).contains(limit) else { throw ValidationError("--limit takes 1 to 4096, got \(limit)") }
        if let after, after < 0 { throw ValidationError("--after takes an event id, 0 or more, got \(after)") }
    }

    func run() async throws {
        try await reportingErrors(json: node.json) {
            let client = ControlClient(dataDirectory: node.dataDirectory)
            var cursor = after
            var first = true
            // Peers are named as every listing names them (none in --json): a contact by
            // its alias, a linked stranger by the name it claimed, looked up again when
            // an event names a peer not seen yet.
            var aliases: [PeerID: String] = [:]
            var names: [PeerID: String] = [:]
            if !node.json, let book = try? await client.call(.contacts(.list)).decode(ContactsReply.self) {
                for contact in book.contacts { aliases[contact.peer] = contact.alias }
            }
            var looked = Set<PeerID>()
            func lookUpNames(for events: [NodeEvent]) async {
                let unseen = Set(events.compactMap(\.event.peer)).subtracting(looked)
                guard !node.json, !unseen.isEmpty else { return }
                looked.formUnion(unseen)
                guard let peers = try? await client.call(.peers).decode(PeersReply.self) else { return }
                for (hex, name) in peers.names ?? [:] { if let peer = PeerID(hex: hex) { names[peer] = name } }
            }
            while true {
                let reply = try await client.call(.events(after: cursor, limit: first ? limit : 4096))
                let events = try EventsReply.decode(reply)
                if let seen = cursor, events.lastID < seen {
                    // Ids count from 1 again after a node restart.
                    printError("the node restarted: event ids start again from 1")
                    cursor = 0
                    continue
                }
                if events.missed > 0 {
                    printError(
                        "\(events.missed) event\(events.missed == 1 ? "" : "s") after #\(cursor ?? 0) are no longer held"
                    )
                }
                await lookUpNames(for: events.events)
                for event in events.events {
                    print(
                        node.json
                            ? String(decoding: try ControlJSON.encoder().encode(event), as: UTF8.self)
                            : TextReport.event(event, aliases: aliases, names: names, full: ids.full)
                    )
                }
                if first, events.events.isEmpty, follow, !node.json {
                    printError("waiting for events (Ctrl-C to stop)")
                }
                fflush(nil)  // print is buffered when piped, and --follow must not sit on lines
                cursor = events.events.last?.id ?? max(cursor ?? 0, events.lastID)
                first = false
                guard follow else { return }
                try await Task.sleep(for: Self.pollInterval)
            }
        }
    }
}
