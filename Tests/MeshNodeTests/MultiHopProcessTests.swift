import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import TestSupport
import Testing

// Issue 13's process test: five `scmesh run` processes in a line A–B–C–D–E over TCP
// on 127.0.0.1, each dialling only its left neighbour, so A reaches E only through
// the three relays B, C and D. Every wait is a bounded poll; nothing asserts a time.

@Suite("multi-hop over five processes", .serialized)
struct MultiHopProcessTests {
    @Test(
        "A→E over three relays: routes learned along the line, send --wait comes back delivered, E holds the message once"
    )
    func deliveredThroughThreeRelays() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let line = try await NodeLine()
        defer { line.stopAll() }
        try await line.waitForRoute(from: 0, to: 4)

        // `scmesh routes` on A: E is four hops away, next hop B, over TCP.
        let routes = try await line.routes(of: 0)
        let toE = try #require(routes.first { $0.destination == line.ids[4] })
        #expect(toE.hops == 4 && toE.nextHop == line.ids[1] && toE.transport == "tcp", "\(toE)")
        #expect(routes.first { $0.destination == line.ids[1] }?.hops == 1)
        let text = try await runScmesh(["routes", "--data-dir", line.directories[0]], home: line.home)
        #expect(
            text.status == 0 && text.standardOutput.contains(line.ids[4].short + "…"),
            "\(text.standardOutput)\(text.standardError)"
        )
        let json = try jsonObject(
            try await runScmesh(["routes", "--data-dir", line.directories[0], "--json"], home: line.home).standardOutput
        )
        let rows = try #require(json["routes"] as? [[String: Any]])
        let rowE = try #require(rows.first { $0["destination"] as? String == line.ids[4].hex })
        #expect(
            rowE["next_hop"] as? String == line.ids[1].hex && rowE["hops"] as? Int == 4
                && rowE["transport"] as? String == "tcp"
        )
        #expect(rowE["age_milliseconds"] is Int && rowE["sequence"] is Int, "\(rowE)")

        let sent = try await line.send(from: 0, to: 4, "over three relays")
        #expect(sent.status == 0, "\(sent.standardOutput)\(sent.standardError)")
        #expect(sent.standardOutput.hasPrefix("delivered message"), "\(sent.standardOutput)")
        try await line.expectDeliveredOnce(from: 0, to: 4, texts: ["over three relays"])
        // B, C and D each carried it (and the receipt back): relayed, never delivered to them.
        for relay in 1...3 {
            let status = try await line.client(relay).call(.status).decode(StatusReply.self)
            #expect(
                status.stats.messagesRelayed >= 1 && status.inboxCount == 0,
                "relay \(relay): \(status.stats.messagesRelayed) relayed"
            )
        }
    }

    @Test(
        "B stopped with SIGTERM keeps its route table in its store (D through C, as it routed), and routes to D again when started"
    )
    func aStoppedRelayKeepsItsRouteTable() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        var line = try await NodeLine(count: 4)
        defer { line.stopAll() }
        try await line.waitForRoute(from: 1, to: 3)
        try await line.stop(1)
        let store = try MeshStore(path: line.directories[1] + "/store.sqlite")
        let saved = await store.routeTable.load()
        try store.close()
        let toD = try #require(saved.first { $0.origin == line.ids[3] }, "\(saved.map(\.origin))")
        #expect(toD.advertisements.map(\.neighbour) == [line.ids[2]] && toD.advertisements.first?.hops == 2, "\(toD)")
        try await line.start(1)
        try await line.waitForRoute(from: 1, to: 3)
    }

    @Test("relaying off at C: a new A→E message waits in A's outbox; once C relays again it is delivered, once")
    func waitsWhileTheMiddleRelayIsOff() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        var line = try await NodeLine()
        defer { line.stopAll() }
        try await line.waitForRoute(from: 0, to: 4)
        let first = try await line.send(from: 0, to: 4, "before C stops relaying")
        #expect(first.status == 0, "\(first.standardOutput)\(first.standardError)")

        try await line.restart(2, extra: ["--set", "relay.enabled=false"])
        let statusC = try await line.client(2).call(.status).decode(StatusReply.self)
        #expect(statusC.relayEnabled == false)
        // C neither announces nor passes announcements on: A's route to E ages out.
        try await eventually("A's route to E ages out while C is off", attempts: 1500) {
            try await !line.routes(of: 0).contains { $0.destination == line.ids[4] }
        }
        let queued = try await runScmesh(
            ["send", "--data-dir", line.directories[0], "--json", line.ids[4].hex, "while C is off"],
            home: line.home
        )
        #expect(queued.status == 0, "\(queued.standardError)")
        let messageID = try #require(try jsonObject(queued.standardOutput)["message_id"] as? String)
        // It waits in A's outbox, queued, and E does not have it.
        let outbox = try jsonObject(
            try await runScmesh(["outbox", "--data-dir", line.directories[0], "--json"], home: line.home).standardOutput
        )
        let waiting = try #require(
            (outbox["messages"] as? [[String: Any]])?.first { $0["message_id"] as? String == messageID },
            "\(outbox)"
        )
        #expect(waiting["status"] as? String == "queued", "\(waiting)")
        #expect((waiting["waiting_for"] as? String)?.contains("none is up") == true, "\(waiting)")
        #expect(try await !inboxTexts(dataDirectory: line.directories[4], home: line.home).contains("while C is off"))
        let text = try await runScmesh(["outbox", "--data-dir", line.directories[0]], home: line.home)
        #expect(text.standardOutput.contains(String(messageID.prefix(8))), "\(text.standardOutput)")

        try await line.restart(2, extra: [])
        try await line.expectDeliveredOnce(from: 0, to: 4, texts: ["before C stops relaying", "while C is off"])
    }
}

/// Issue 13: a relay killed with SIGKILL while it holds messages in custody.
@Suite("a relay killed while holding messages in custody", .serialized)
struct RelayCustodyProcessTests {
    @Test(
        "A–B–C: C is down, B takes custody of A's messages; B is killed -9 mid-stream and restarted, C comes back: each message reaches C exactly once and A sees every one delivered; B's restart repeats its announcement sequence"
    )
    func relayKilledHoldingMessages() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        // Routes are kept long enough that A goes on handing messages for C to B while
        // C is down (B takes custody for a destination it cannot reach yet), and nobody
        // refreshes its announcements within the test (so that B's sequence after its
        // restart tells whether the restart announced a new one).
        var line = try await NodeLine(
            count: 3,
            common: ["--set", "routing.route_max_age_ms=600000", "--set", "routing.announce_interval_ms=600000"]
        )
        defer { line.stopAll() }
        try await line.waitForRoute(from: 0, to: 2)
        line.kill9(2)
        try await eventually("B notices that C is gone", attempts: 1500) {
            try await !line.client(1).call(.peers).decode(PeersReply.self).peers.contains { $0.peer == line.ids[2] }
        }

        // 60 messages, queued on A through its control socket in one go.
        let texts = (0..<60).map { "custody \($0)" }
        for text in texts {
            let reply = try await line.client(0).call(.send(SendRequest(peer: line.ids[2].hex, text: text)))
            #expect(reply.ok, "\(reply)")
        }
        // Kill B as soon as it holds some of them in custody, while A is still handing
        // the rest over (or has just finished).
        try await eventually("B takes custody of A's messages", attempts: 1500) {
            try await line.client(1).call(.status).decode(StatusReply.self).stats.relayAccepted >= 10
        }
        // The sequence of B's announcements that A holds (B's store keeps it).
        let sequenceOfB = try #require(try await line.routes(of: 0).first { $0.destination == line.ids[1] }?.sequence)
        line.kill9(1)
        // Every message A handed over before the kill was acknowledged only once B had
        // it on disk; the rest stay in A's outbox. Nothing is delivered yet.
        let statusA = try await line.client(0).call(.status).decode(StatusReply.self)
        #expect(
            statusA.outboxCount == texts.count,
            "A still waits for receipts of all \(texts.count): \(statusA.outboxCount)"
        )

        try await line.start(1)
        let statusB = try await line.client(1).call(.status).decode(StatusReply.self)
        #expect(
            (statusB.outboxCount ?? 0) >= 10,
            "B restarted with the messages it held in custody: \(statusB.outboxCount)"
        )
        try await line.start(2)
        try await line.expectDeliveredOnce(from: 0, to: 2, texts: texts)
        // B's restart cost no new sequence crossing the mesh: it repeated the one A held
        // (docs/PROTOCOL.md §A.5, "Restarting").
        let afterRestart = try await line.routes(of: 0).first { $0.destination == line.ids[1] }?.sequence
        #expect(
            afterRestart == sequenceOfB,
            "A holds B at \(String(describing: afterRestart)), \(sequenceOfB) before B's kill -9"
        )
        // B forgets nothing it should still carry, and holds nothing once all is through.
        try await eventually("B's outbox drains", attempts: 1500) {
            try await line.client(1).call(.status).decode(StatusReply.self).outboxCount == 0
        }
    }
}

/// Nodes in a line over TCP on 127.0.0.1 (five by default: A–B–C–D–E), on
/// ``NodeProcesses``; node i dials only node i − 1. `common` arguments go to every node
/// at every start.
struct NodeLine {
    let nodes: NodeProcesses
    let ports: [Int]
    let ids: [PeerID]
    let common: [String]
    var home: String { nodes.home }
    var directories: [String] { ports.indices.map { nodes.directory.file(Self.name($0)) } }
    private var members: [NodeProcesses.Node] = []

    init(count: Int = 5, common: [String] = []) async throws {
        nodes = try NodeProcesses()
        ports = try (0..<count).map { _ in try freeLoopbackPort() }
        self.common = common
        var ids: [PeerID] = []
        for index in 0..<count { ids.append(try await nodes.createIdentity(Self.name(index))) }
        self.ids = ids
        for index in 0..<count { members.append(try await nodes.start(Self.name(index), arguments(index, extra: []))) }
    }

    private static func name(_ index: Int) -> String { "node\(index)" }

    func arguments(_ index: Int, extra: [String]) -> [String] {
        var arguments = [
            "--set", "transports.tcp.listen=127.0.0.1:\(ports[index])",
            "--set", "routing.announce_interval_ms=1000", "--set", "routing.route_max_age_ms=4000",
        ]
        if index > 0 { arguments += ["--set", "transports.tcp.bootstrap=127.0.0.1:\(ports[index - 1])"] }
        return arguments + common + extra
    }

    func client(_ index: Int) -> ControlClient { ControlClient(dataDirectory: directories[index]) }

    func routes(of index: Int) async throws -> [RouteSnapshot] {
        try await client(index).call(.routes).decode(RoutesReply.self).routes
    }

    func waitForRoute(from source: Int, to destination: Int) async throws {
        do {
            try await eventually("node \(source) learns a route to node \(destination)", attempts: 1500) {
                try await routes(of: source).contains { $0.destination == ids[destination] }
            }
        } catch {
            // What both ends say about their transports and links, to tell a node that
            // never listened from one whose announcements went missing.
            let near = (try? await client(source).call(.status).line) ?? "no status"
            let far = (try? await client(destination).call(.status).line) ?? "no status"
            Issue.record("status of node \(source):\n\(near)\nstatus of node \(destination):\n\(far)")
            throw error
        }
    }

    /// `scmesh send --wait` from `source` to `destination`.
    func send(from source: Int, to destination: Int, _ text: String) async throws -> ScmeshResult {
        try await runScmesh(
            ["send", "--data-dir", directories[source], "--timeout", "60", ids[destination].hex, text],
            home: home
        )
    }

    /// SIGTERMs node `index` and starts it again with `extra` arguments.
    mutating func restart(_ index: Int, extra: [String]) async throws {
        try await stop(index)
        try await start(index, extra: extra)
    }

    /// SIGTERMs node `index` and waits until it has exited (a graceful stop).
    func stop(_ index: Int) async throws {
        _ = try await nodes.terminate(members[index])
    }

    /// Kills node `index` with SIGKILL (no shutdown of any kind) and reaps it.
    func kill9(_ index: Int) {
        nodes.kill9(members[index])
    }

    /// Starts node `index` again (after ``kill9(_:)``) and waits until it answers.
    mutating func start(_ index: Int, extra: [String] = []) async throws {
        members[index] = try await nodes.start(Self.name(index), arguments(index, extra: extra))
    }

    /// `destination`'s inbox ends up holding exactly `texts` from `source`, each once,
    /// and `source`'s history shows each delivered.
    func expectDeliveredOnce(from source: Int, to destination: Int, texts: [String]) async throws {
        try await eventually("the messages reach node \(destination)", attempts: 3000) {
            Set(try await inboxTexts(dataDirectory: directories[destination], home: home)).isSuperset(of: texts)
        }
        try await eventually("node \(source)'s history shows them delivered", attempts: 3000) {
            let history = try await client(source).call(.history(MessageQuery(peer: ids[destination].hex)))
                .decode(HistoryReply.self)
            return history.outboundCounts == ["delivered": texts.count]
        }
        let inbox = try await client(destination).call(.inbox(InboxRequest())).decode(InboxReply.self)
        #expect(inbox.messages.compactMap(\.text).sorted() == texts.sorted())
        #expect(inbox.messages.allSatisfy { $0.from == ids[source] })
        #expect(inbox.totalReceived == texts.count)
    }

    func stopAll() {
        nodes.stop()
    }
}
