import Foundation
import MeshCore
import MeshTesting
import Testing

@testable import MeshStore

@Suite("Persisted outbox and history")
struct StoreOutboxTests {
    @Test("queued messages survive a restart; a claim writes nothing and a claimed one is simply queued again")
    func survivesReopen() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let bob = PeerID.random()
            let first = outbound(to: bob, bytes: 5, flags: 1)
            let second = outbound(to: bob, bytes: 6)
            try await withReopened(path) { store throws in
                try await store.outbox.enqueue(first)
                try await store.outbox.enqueue(second)
                let before = store.database.committer.counts
                #expect(await store.outbox.claim(second.id) == second)
                #expect(store.database.committer.counts.writes == before.writes, "a claim is kept in memory")
                #expect(await store.outbox.claim(second.id) == nil, "claimed already")
                #expect(await store.outbox.waiting(for: bob) == [first.id])
            }
            try await withReopened(path) { store throws in
                #expect(store.requeuedAtOpen.isEmpty)
                #expect(await store.outbox.waiting(for: bob) == [first.id, second.id])
                #expect(await store.outbox.claim(first.id) == first)
                #expect(await store.outbox.claim(second.id) == second)
                #expect(try await store.outbox.pendingCount == 2)
                #expect(try await store.outbox.pendingBytes == 11)
                // Each attempt is written with the update that ends it.
                await store.outbox.update(second.id, to: .queued, transport: nil, reason: "the link went down")
                #expect(await store.outbox.claim(second.id) == second)
                await store.outbox.update(second.id, to: .sent, transport: "tcp", reason: nil)
                let trace = try await store.history.trace(of: second.id)
                #expect(trace.map(\.kind) == [.enqueued, .attempt, .status, .attempt, .status])
                #expect(trace.compactMap(\.attempt) == [1, 2])
                #expect(try await store.history.entry(second.id)?.attempts == 2)
            }
        }
    }

    @Test("a full outbox refuses with an error naming the limit, per peer and in total")
    func limits() async throws {
        var configuration = StoreConfiguration()
        configuration.outboxMaxMessagesPerPeer = 2
        configuration.outboxMaxMessages = 3
        configuration.outboxMaxBytesPerPeer = 100
        configuration.outboxMaxBytes = 150
        try await withStore(configuration: configuration) { store throws in
            let bob = PeerID.random()
            let carol = PeerID.random()
            let dave = PeerID.random()
            let first = outbound(to: bob)
            try await store.outbox.enqueue(first)
            try await store.outbox.enqueue(outbound(to: bob))
            var error = await meshError { try await store.outbox.enqueue(outbound(to: bob)) }
            #expect(error?.code == .storeFull)
            #expect(error?.message.contains("outboxMaxMessagesPerPeer = 2") == true)
            #expect(error?.message.contains(bob.description) == true)

            error = await meshError { try await store.outbox.enqueue(outbound(to: carol, bytes: 101)) }
            #expect(error?.message.contains("outboxMaxBytesPerPeer = 100") == true)

            try await store.outbox.enqueue(outbound(to: carol, bytes: 100))
            error = await meshError { try await store.outbox.enqueue(outbound(to: dave)) }
            #expect(error?.code == .storeFull)
            #expect(error?.message.contains("outboxMaxMessages = 3") == true)

            // Delivering one makes room again; the byte total still binds.
            _ = await store.outbox.claim(first.id)
            await store.outbox.update(first.id, to: .delivered, transport: "tcp", reason: nil)
            error = await meshError { try await store.outbox.enqueue(outbound(to: dave, bytes: 50)) }
            #expect(error?.message.contains("outboxMaxBytes = 150") == true)
            try await store.outbox.enqueue(outbound(to: dave, bytes: 46))
            #expect(try await store.outbox.pendingCount == 3)
        }
    }

    @Test("the bounds follow a payload replaced with one of another size, and a message sent")
    func boundsFollowReplacedPayloads() async throws {
        var configuration = StoreConfiguration()
        configuration.outboxMaxBytesPerPeer = 100
        try await withStore(configuration: configuration) { store throws in
            let bob = PeerID.random()
            let first = outbound(to: bob, bytes: 60)
            try await store.outbox.enqueue(first)
            var error = await meshError { try await store.outbox.enqueue(outbound(to: bob, bytes: 50)) }
            #expect(error?.message.contains("60 bytes wait for peer") == true)
            try await store.outbox.replacePayload(first.id, with: [UInt8](repeating: 1, count: 30), flags: 0)
            #expect(try await store.outbox.pendingBytes == 30)
            let second = outbound(to: bob, bytes: 70)
            try await store.outbox.enqueue(second)
            error = await meshError { try await store.outbox.enqueue(outbound(to: bob, bytes: 1)) }
            #expect(error?.message.contains("100 bytes wait for peer") == true)
            _ = await store.outbox.claim(second.id)
            await store.outbox.update(second.id, to: .sent, transport: "tcp", reason: nil)
            #expect(try await store.outbox.pendingBytes == 30)
            try await store.outbox.enqueue(outbound(to: bob, bytes: 70))
        }
    }

    @Test("expire(now:) marks overdue messages expired, with the default and per-message expiry")
    func expiry() async throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.defaultExpiry = .seconds(3_600)
        try await withStore(configuration: configuration, clock: clock) { store throws in
            let bob = PeerID.random()
            let hourly = outbound(to: bob)
            let short = outbound(to: bob)
            let long = outbound(to: bob)
            try await store.outbox.enqueue(hourly)
            try await store.outbox.enqueue(short, expiresAfter: .seconds(600))
            try await store.outbox.enqueue(long, expiresAfter: .seconds(7_200))
            #expect(try await store.outbox.expire() == [])

            clock.advance(by: 1_800)
            #expect(try await store.outbox.expire() == [short.id])
            let record = try #require(await store.outbox.record(short.id))
            #expect(record.status == .expired)
            #expect(record.reason?.contains("expired after 30m") == true)
            #expect(await store.outbox.waiting(for: bob) == [hourly.id, long.id])
            #expect(try await store.history.entry(short.id)?.failedAt == clock.now)

            // A message being sent is left to its send; it expires once released.
            #expect(await store.outbox.claim(long.id) == long)
            clock.advance(by: 7_200)
            #expect(try await store.outbox.expire(now: clock.now) == [hourly.id])
            await store.outbox.update(long.id, to: .queued, transport: nil, reason: "no route")
            #expect(await store.outbox.waiting(for: bob) == [])
            #expect(try await store.outbox.expire() == [long.id])
            #expect(try await store.outbox.pendingCount == 0)
            // Nothing is dropped silently: every message is still in the history.
            #expect(try await store.history.entries(peer: bob).map(\.status) == [.expired, .expired, .expired])
        }
    }

    @Test("claiming an overdue message marks it expired instead; sent messages expire too")
    func claimAfterExpiry() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { store throws in
            let bob = PeerID.random()
            let overdue = outbound(to: bob)
            let relayed = outbound(to: bob)
            try await store.outbox.enqueue(overdue, expiresAfter: .seconds(60))
            try await store.outbox.enqueue(relayed, expiresAfter: .seconds(60))
            _ = await store.outbox.claim(relayed.id)
            await store.outbox.update(relayed.id, to: .sent, transport: "tcp", reason: nil)
            clock.advance(by: 61)
            #expect(await store.outbox.claim(overdue.id) == nil)
            #expect(await store.outbox.record(overdue.id)?.status == .expired)
            #expect(try await store.outbox.expire() == [relayed.id])
            #expect(try await store.history.entry(relayed.id)?.reason?.contains("status was sent") == true)
        }
    }

    @Test("history and trace say what happened to a message, and when")
    func historyAndTrace() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { store throws in
            let bob = PeerID.random()
            let carol = PeerID.random()
            let message = outbound(to: bob, bytes: 12)
            let start = clock.now
            try await store.outbox.enqueue(message)
            clock.advance(by: 1)
            _ = await store.outbox.claim(message.id)
            await store.outbox.update(message.id, to: .queued, transport: nil, reason: "no live link to peer")
            clock.advance(by: 1)
            _ = await store.outbox.claim(message.id)
            clock.advance(by: 1)
            await store.outbox.update(message.id, to: .delivered, transport: "tcp", reason: nil)

            let trace = try await store.history.trace(of: message.id)
            #expect(trace.map(\.kind) == [.enqueued, .attempt, .status, .attempt, .status])
            #expect(trace.map(\.status) == [.queued, .queued, .queued, .queued, .delivered])
            #expect(trace.compactMap(\.attempt) == [1, 2])
            #expect(trace[2].reason == "no live link to peer")
            #expect(trace[4].transport == "tcp")
            #expect(trace.map(\.at) == [start, start + 1, start + 1, start + 2, start + 3])

            let entry = try #require(try await store.history.entry(message.id))
            #expect(entry.direction == .outbound)
            #expect(entry.peer == bob)
            #expect(entry.bytes == 12)
            #expect(entry.status == .delivered)
            #expect(entry.attempts == 2)
            #expect(entry.createdAt == start)
            #expect(entry.sentAt == start + 3)
            #expect(entry.deliveredAt == start + 3)
            #expect(entry.failedAt == nil)
            #expect(entry.expiresAt == start + 7 * 86_400)

            // Newest first, all or per peer, both directions, with a limit.
            let toCarol = outbound(to: carol)
            try await store.outbox.enqueue(toCarol)
            let fromBob = InboundMessage(id: .random(), from: bob, payload: [1], transport: "ble")
            try await store.inbox.accept(fromBob)
            #expect(try await store.history.entries().map(\.id) == [fromBob.id, toCarol.id, message.id])
            #expect(try await store.history.entries(peer: bob).map(\.id) == [fromBob.id, message.id])
            #expect(try await store.history.entries(peer: bob).map(\.direction) == [.inbound, .outbound])
            #expect(try await store.history.entries(limit: 1).map(\.id) == [fromBob.id])
            #expect(try await store.history.trace(of: .random()).isEmpty)
        }
    }

    @Test("a pending message ID cannot be enqueued twice; a finished one can be sent again")
    func reenqueue() async throws {
        try await withStore { store throws in
            let bob = PeerID.random()
            let message = outbound(to: bob)
            try await store.outbox.enqueue(message)
            let error = await meshError { try await store.outbox.enqueue(message) }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("already in the outbox") == true)
            _ = await store.outbox.claim(message.id)
            await store.outbox.update(message.id, to: .failed, transport: nil, reason: "no route")
            try await store.outbox.enqueue(message)
            #expect(await store.outbox.record(message.id)?.status == .queued)
            #expect(await store.outbox.waiting(for: bob) == [message.id])
            #expect(
                try await store.history.trace(of: message.id).map(\.kind) == [.enqueued, .attempt, .status, .enqueued]
            )
        }
    }

    @Test("enqueueClaimed queues and claims in one step; its attempt counts on from an earlier send")
    func enqueueClaimed() async throws {
        try await withStore { store throws in
            let bob = PeerID.random()
            let message = outbound(to: bob)
            let before = store.database.committer.counts
            #expect(try await store.outbox.enqueueClaimed(message) == message)
            #expect(store.database.committer.counts.writes == before.writes + 1, "one write, the claim in memory")
            #expect(await store.outbox.claim(message.id) == nil, "claimed already")
            #expect(await store.outbox.waiting(for: bob) == [])
            #expect(await store.outbox.record(message.id)?.status == .queued)
            let error = await meshError { try await store.outbox.enqueueClaimed(message) }
            #expect(error?.code == .invalidArgument)
            await store.outbox.update(message.id, to: .failed, transport: nil, reason: "no route")
            // Sent again under its ID: the second attempt.
            #expect(try await store.outbox.enqueueClaimed(message) == message)
            await store.outbox.update(message.id, to: .sent, transport: "tcp", reason: nil)
            let trace = try await store.history.trace(of: message.id)
            #expect(trace.map(\.kind) == [.enqueued, .attempt, .status, .enqueued, .attempt, .status])
            #expect(trace.compactMap(\.attempt) == [1, 2])
            #expect(try await store.outbox.pendingCount == 0)
        }
    }

    @Test("maintain() expires, prunes the dedup log and bounds the history in one pass")
    func maintenance() async throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.historyLimit = 3
        configuration.defaultExpiry = .seconds(60)
        try await withStore(configuration: configuration, clock: clock) { store throws in
            let bob = PeerID.random()
            let pending = outbound(to: bob)
            try await store.outbox.enqueue(pending, expiresAfter: .seconds(86_400 * 30))
            for index in 0..<4 { try await store.inbox.accept(message(from: bob, "m\(index)")) }
            let overdue = outbound(to: bob)
            try await store.outbox.enqueue(overdue)
            clock.advance(by: 9 * 86_400)
            try await store.inbox.accept(message(from: bob, "recent"))
            let report = try await store.maintain()
            #expect(report.expired == [overdue.id])
            #expect(report.dedupPruned == 4)
            #expect(report.historyPruned == 4)
            #expect(try await store.dedup.count == 1)
            // The pending message's entry is kept, however old.
            let kept = try await store.history.entries(limit: 10)
            #expect(kept.count == 3)
            #expect(kept.contains { $0.id == pending.id })
            #expect(await store.outbox.waiting(for: bob) == [pending.id])
        }
    }
}

@Suite("Store maintenance service")
struct StoreMaintenanceTests {
    @Test("passes at start and after every interval, and stops on cancellation")
    func periodicPasses() async throws {
        let wallClock = TestClock()
        try await withStore(clock: wallClock) { store throws in
            let bob = PeerID.random()
            let first = outbound(to: bob)
            let second = outbound(to: bob)
            try await store.outbox.enqueue(first, expiresAfter: .seconds(10))
            try await store.outbox.enqueue(second, expiresAfter: .seconds(100))
            wallClock.advance(by: 50)
            let clock = ManualClock()
            let service = StoreMaintenance(store: store, interval: .seconds(60), clock: clock)
            let running = Task { try await service.run() }
            await clock.waitForSleepers(atLeast: 1)
            #expect(await store.outbox.record(first.id)?.status == .expired)
            #expect(await store.outbox.record(second.id)?.status == .queued)

            wallClock.advance(by: 60)
            clock.advance(by: .seconds(60))
            await clock.waitForSleepers(atLeast: 1)
            #expect(await store.outbox.record(second.id)?.status == .expired)
            running.cancel()
            try await running.value
        }
    }
}

@Suite("Outbox payloads in files")
struct OutboxPayloadFileTests {
    @Test(
        "a payload at the threshold goes to a file (small ones stay in the row); it survives a reopen, is claimed byte for byte, and its file goes when the message is sent or expires"
    )
    func payloadFiles() async throws {
        var configuration = StoreConfiguration()
        configuration.outboxFileThreshold = 1_000
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let files = path + "-payloads"
            let bob = PeerID.random()
            let large = outbound(to: bob, bytes: 1_000)
            let small = outbound(to: bob, bytes: 999)
            let expiring = OutboundMessage(
                id: .random(),
                destination: bob,
                payload: Array(repeating: 9, count: 5_000),
                flags: 0,
                expiresAfter: .seconds(60)
            )
            try await withReopened(path, configuration: configuration) { store throws in
                try await store.outbox.enqueue(large)
                try await store.outbox.enqueue(small)
                try await store.outbox.enqueue(expiring)
                let names = try FileManager.default.contentsOfDirectory(atPath: files).sorted()
                #expect(names.count == 2)
                #expect(Set(names.map { String($0.prefix(32)) }) == [large.id.hex, expiring.id.hex])
                #expect(try await store.outbox.pendingBytes == 6_999)
            }
            // A file no row names (a crash between the file's write and the commit) is
            // removed when the store opens.
            #expect(
                FileManager.default.createFile(
                    atPath: files + "/\(MessageID.random().hex)-00000000",
                    contents: Data([1, 2, 3])
                )
            )
            try await withReopened(path, configuration: configuration) { store throws in
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).count == 2)
                #expect(await store.outbox.claim(large.id) == large)
                #expect(await store.outbox.claim(small.id) == small)
                await store.outbox.update(large.id, to: .sent, transport: "tcp", reason: nil)
                await store.outbox.update(small.id, to: .sent, transport: "tcp", reason: nil)
                let left = try FileManager.default.contentsOfDirectory(atPath: files)
                #expect(left.count == 1 && left.first?.hasPrefix(expiring.id.hex) == true)
                #expect(
                    try await store.outbox.expire(now: Date(timeIntervalSince1970: 1_800_000_000 + 3_600)) == [
                        expiring.id
                    ]
                )
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).isEmpty)
                #expect(try await store.outbox.pendingCount == 0)
            }
        }
    }

    @Test(
        "a payload replaced by a larger sealed one moves to a file, and back into the row when small; a missing file is an error naming it, not a crash"
    )
    func replacedPayloads() async throws {
        var configuration = StoreConfiguration()
        configuration.outboxFileThreshold = 1_000
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let files = path + "-payloads"
            let bob = PeerID.random()
            let message = outbound(to: bob, bytes: 900)
            try await withReopened(path, configuration: configuration) { store throws in
                try await store.outbox.enqueue(message)
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).isEmpty)
                let sealed = Array(repeating: UInt8(7), count: 1_200)
                try await store.outbox.replacePayload(message.id, with: sealed, flags: 1)
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).count == 1)
                #expect(await store.outbox.claim(message.id)?.payload == sealed)
                await store.outbox.update(message.id, to: .queued, transport: nil, reason: "retry")
                try await store.outbox.replacePayload(message.id, with: [1, 2, 3], flags: 1)
                #expect(try FileManager.default.contentsOfDirectory(atPath: files).isEmpty)
                #expect(await store.outbox.claim(message.id)?.payload == [1, 2, 3])
                await store.outbox.update(message.id, to: .queued, transport: nil, reason: "retry")
                // The file of a large payload deleted behind the store's back: the claim
                // fails (logged, naming the file) and the message stays queued.
                let large = outbound(to: bob, bytes: 2_000)
                try await store.outbox.enqueue(large)
                for name in try FileManager.default.contentsOfDirectory(atPath: files) {
                    try FileManager.default.removeItem(atPath: files + "/" + name)
                }
                #expect(await store.outbox.claim(large.id) == nil)
                #expect(await store.outbox.record(large.id)?.status == .queued)
            }
        }
    }
}
