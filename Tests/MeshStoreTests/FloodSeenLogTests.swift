import Foundation
import MeshCore
import Testing

@testable import MeshStore

@Suite("The persisted flood duplicate cache")
struct FloodSeenLogTests {
    @Test("an ID remembered before a restart is still known after it; maintenance forgets it after the retention")
    func survivesRestart() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let seen = MessageID.random()
            try await withReopened(path) { store throws in
                #expect(await store.floodSeen.contains(seen) == false)
                #expect(try await store.floodSeen.insert(seen) == true)
                #expect(try await store.floodSeen.insert(seen) == false)
            }
            try await withReopened(path) { store throws in
                // A restarted node: the copy is a duplicate, never flooded again.
                #expect(await store.floodSeen.contains(seen))
                #expect(await store.floodSeen.contains(.random()) == false)
                #expect(try await store.floodSeen.count == 1)
                let later = TestClock().now.addingTimeInterval(store.configuration.dedupRetention.seconds + 3600)
                let report = try await store.maintain(now: later)
                #expect(report.dedupPruned >= 1)
                #expect(await store.floodSeen.contains(seen) == false)
            }
        }
    }

    @Test("an inbox entry keeps its emergency mark across a restart")
    func emergencyMark() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let sender = PeerID.random()
            try await withReopened(path) { store throws in
                try await store.inbox.accept(
                    InboundMessage(id: .random(), from: sender, payload: [1], transport: "lo", emergency: true)
                )
                try await store.inbox.accept(InboundMessage(id: .random(), from: sender, payload: [2], transport: "lo"))
            }
            try await withReopened(path) { store throws in
                let entries = try await store.inbox.entries()
                #expect(entries.map(\.message.emergency) == [true, false])
            }
        }
    }
}

extension Duration {
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
