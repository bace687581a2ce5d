import Foundation
import MeshCore
import Testing

@testable import MeshStore

@Suite("History: messages on their way; ledger: every address")
struct HistoryPendingLedgerTests {
    @Test(
        "pending lists queued and sent outbound messages oldest first, without receipts; totals and status counts agree"
    )
    func pending() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { store in
            let bob = PeerID.random()
            let carol = PeerID.random()
            let queued = OutboundMessage(id: .random(), destination: bob, payload: Array("one".utf8), flags: 0)
            clock.advance(by: 1)
            let sent = OutboundMessage(id: .random(), destination: carol, payload: Array("two!".utf8), flags: 0)
            clock.advance(by: 1)
            let delivered = OutboundMessage(id: .random(), destination: bob, payload: Array("three".utf8), flags: 0)
            let receipt = OutboundMessage(
                id: .random(),
                destination: bob,
                payload: [1, 2],
                flags: DataFrame.receiptFlag
            )
            for message in [queued, sent, delivered, receipt] { try await store.outbox.enqueue(message) }
            await store.outbox.update(sent.id, to: .sent, transport: "tcp", reason: nil)
            await store.outbox.update(delivered.id, to: .delivered, transport: "tcp", reason: nil)
            let pending = try await store.history.pending()
            #expect(pending.map(\.id) == [queued.id, sent.id])
            #expect(pending.map(\.status) == [.queued, .sent])
            #expect(try await store.history.pending(peer: bob).map(\.id) == [queued.id])
            #expect(try await store.history.pending(limit: 1).map(\.id) == [queued.id])
            let totals = try await store.history.pendingTotals()
            #expect(totals.messages == 2 && totals.bytes == 7)
            #expect(try await store.history.statusCounts() == [.queued: 1, .sent: 1, .delivered: 1])
            #expect(try await store.history.statusCounts(peer: bob) == [.queued: 1, .delivered: 1])
            #expect(try await store.history.statusCounts(direction: .inbound).isEmpty)
        }
    }

    @Test("the ledger lists every peer's addresses, latest success first")
    func allAddresses() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { store in
            let bob = PeerID.random()
            let carol = PeerID.random()
            try await store.ledger.recordSuccess(peer: bob, transport: "tcp", address: "10.0.0.1:1")
            clock.advance(by: 1)
            try await store.ledger.recordSuccess(peer: carol, transport: "tcp", address: "10.0.0.2:1")
            try await store.ledger.recordFailure(peer: carol, transport: "tcp", address: "10.0.0.3:1")
            let all = try await store.ledger.all()
            #expect(all.map(\.address) == ["10.0.0.2:1", "10.0.0.1:1", "10.0.0.3:1"])
            #expect(try await store.ledger.all(limit: 1).map(\.peer) == [carol])
        }
    }
}
