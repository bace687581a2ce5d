import Dispatch
import Foundation
import GRDB
import MeshCore
import MeshTesting
import Testing

@testable import MeshStore

/// Group commit: writes that wait at the same moment share one transaction; one that
/// fails is undone alone. The writer connection is held busy by the test (a blocked
/// write of its own) while the writes queue up, so what shares a commit is decided by
/// the test, not by timing.
@Suite("Group commit")
struct GroupCommitTests {
    /// Holds the store's writer connection until `release` is called.
    final class WriterGate: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let leave = DispatchSemaphore(value: 0)

        init(_ store: MeshStore) {
            store.database.pool.asyncWriteWithoutTransaction { _ in
                self.entered.signal()
                self.leave.wait()
            }
            entered.wait()
        }

        func release() { leave.signal() }
    }

    @Test("writes waiting together commit in one transaction, each durable when its call returns")
    func waitingWritesShareACommit() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let destination = PeerID.random()
            let messages = (0..<100).map { _ in
                OutboundMessage(id: .random(), destination: destination, payload: [1, 2, 3], flags: 0)
            }
            try await withReopened(path) { store throws in
                let before = store.database.committer.counts
                let gate = WriterGate(store)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for message in messages { group.addTask { try await store.outbox.enqueue(message) } }
                    try await eventually("every write waits for the writer", attempts: 2000) {
                        store.database.committer.waiting == messages.count
                    }
                    gate.release()
                    try await group.waitForAll()
                }
                let after = store.database.committer.counts
                #expect(after.transactions - before.transactions == 1)
                #expect(after.writes - before.writes == messages.count)
            }
            try await withReopened(path) { store throws in
                #expect(try await store.outbox.pendingCount == messages.count)
            }
        }
    }

    @Test("writes that fail in a shared commit fail alone; the others commit")
    func failingWriteFailsAlone() async throws {
        try await withStore { store throws in
            let destination = PeerID.random()
            // Two writes that fail: the first undoes the batch's first try, the second
            // fails within the savepoints of the second.
            let pendings = (0..<2).map { _ in
                OutboundMessage(id: .random(), destination: destination, payload: [9], flags: 0)
            }
            for pending in pendings { try await store.outbox.enqueue(pending) }
            let good = (0..<10).map { _ in
                OutboundMessage(id: .random(), destination: destination, payload: [1], flags: 0)
            }
            let before = store.database.committer.counts
            let gate = WriterGate(store)
            let results = try await withThrowingTaskGroup(of: (MessageID, Bool).self) { group in
                for message in good.prefix(5) + pendings.prefix(1) + good.dropFirst(5) + pendings.dropFirst() {
                    group.addTask {
                        do {
                            try await store.outbox.enqueue(message)
                            return (message.id, true)
                        } catch {
                            return (message.id, false)
                        }
                    }
                }
                try await eventually("every write waits for the writer", attempts: 2000) {
                    store.database.committer.waiting == good.count + 2
                }
                gate.release()
                var results: [MessageID: Bool] = [:]
                for try await (id, ok) in group { results[id] = ok }
                return results
            }
            #expect(pendings.allSatisfy { results[$0.id] == false })
            #expect(good.allSatisfy { results[$0.id] == true })
            #expect(store.database.committer.counts.transactions - before.transactions == 1)
            #expect(store.database.committer.counts.writes - before.writes == good.count)
            #expect(try await store.outbox.pendingCount == good.count + 2)
            for message in good { #expect(await store.outbox.record(message.id)?.status == .queued) }
        }
    }

    @Test("an inbox message and its receipt commit together; a second copy queues no second receipt")
    func receiptInTheInboxTransaction() async throws {
        try await withStore { store throws in
            let sender = PeerID.random()
            let inbound = message(from: sender, "hello")
            let receipt = OutboundMessage(
                id: .random(),
                destination: sender,
                payload: [7, 7],
                flags: DataFrame.receiptFlag
            )
            let before = store.database.committer.counts
            try await store.inbox.accept(inbound, queueing: receipt, in: store.outbox)
            #expect(store.database.committer.counts.writes - before.writes == 1)
            #expect(try await store.inbox.count == 1)
            #expect(await store.outbox.record(receipt.id)?.status == .queued)
            // The sender's retry: stored once, the receipt waiting already is kept.
            try await store.inbox.accept(inbound, queueing: receipt, in: store.outbox)
            #expect(try await store.inbox.count == 1)
            #expect(try await store.outbox.pendingCount == 1)
            // Once the receipt went, a later copy issues it again.
            await store.outbox.update(receipt.id, to: .delivered, transport: "tcp", reason: nil)
            try await store.inbox.accept(inbound, queueing: receipt, in: store.outbox)
            #expect(try await store.inbox.count == 1)
            #expect(await store.outbox.record(receipt.id)?.status == .queued)
        }
    }
}
