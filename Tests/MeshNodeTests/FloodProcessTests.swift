import Foundation
import MeshCore
import MeshNode
import TestSupport
import Testing

/// Issue 13's flooding fallback and emergency class with real `scmesh run` processes
/// over TCP: a line A–B–C–D–E whose routing announces neighbours only
/// (`routing.max_hops=1`), so A has no route to E and must flood.
@Suite("flooding over five processes", .serialized)
struct FloodProcessTests {
    @Test("no route A→E: flooded through three relays, delivered once with its receipt; --emergency arrives marked")
    func floodAndEmergency() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let line = try await NodeLine(common: ["--set", "routing.max_hops=1", "--set", "flood.max_delay_ms=20"])
        defer { line.stopAll() }
        for index in 1..<5 { try await line.waitForRoute(from: index, to: index - 1) }
        #expect(try await !line.routes(of: 0).contains { $0.destination == line.ids[4] })

        let sent = try await line.send(from: 0, to: 4, "flooded")
        #expect(
            sent.status == 0 && sent.standardOutput.hasPrefix("delivered message"),
            "\(sent.standardOutput)\(sent.standardError)"
        )
        for relay in 1...3 {
            let status = try await line.client(relay).call(.status).decode(StatusReply.self)
            #expect(status.stats.flood.accepted >= 1 && status.inboxCount == 0, "relay \(relay): \(status.stats.flood)")
        }

        let urgent = try await runScmesh(
            ["send", "--data-dir", line.directories[0], "--emergency", "--timeout", "60", line.ids[4].hex, "help"],
            home: line.home
        )
        #expect(
            urgent.status == 0 && urgent.standardOutput.hasPrefix("delivered message"),
            "\(urgent.standardOutput)\(urgent.standardError)"
        )
        try await line.expectDeliveredOnce(from: 0, to: 4, texts: ["flooded", "help"])
        let inbox = try await inbox(dataDirectory: line.directories[4], home: line.home)
        #expect(inbox.first { $0["text"] as? String == "help" }?["emergency"] as? Bool == true, "\(inbox)")
        #expect(inbox.first { $0["text"] as? String == "flooded" }?["emergency"] == nil, "\(inbox)")
        let text = try await runScmesh(["inbox", "--data-dir", line.directories[4]], home: line.home)
        #expect(text.standardOutput.contains("EMERGENCY"), "\(text.standardOutput)")
    }
}
