import MeshCore
import Testing

@testable import MeshStore

/// The ``OutboundQueue`` contract, one test body per behaviour, run against MeshCore's
/// reference ``InMemoryOutboundQueue`` and the SQLite ``StoreOutbox``: the store must be
/// a drop-in replacement.
enum QueueBackend: String, CaseIterable, CustomTestStringConvertible {
    case inMemory
    case sqlite

    var testDescription: String { rawValue }

    func run(_ body: (any OutboundQueue) async throws -> Void) async throws {
        switch self {
        case .inMemory:
            try await body(InMemoryOutboundQueue())
        case .sqlite:
            try await withStore { store in try await body(store.outbox) }
        }
    }

    /// Runs `body` with a message sink and the queue its receipts go to: the channel
    /// sink and the in-memory queue, or the store's inbox and outbox.
    func runWithSink(_ body: (any MessageSink, any OutboundQueue) async throws -> Void) async throws {
        switch self {
        case .inMemory:
            let channel = BoundedChannel<InboundMessage>(capacity: 16)
            try await body(ChannelSink(channel: channel), InMemoryOutboundQueue())
        case .sqlite:
            try await withStore { store in try await body(store.inbox, store.outbox) }
        }
    }
}

@Suite("OutboundQueue behaviour, in memory and SQLite")
struct OutboundQueueBehaviourTests {
    @Test(arguments: QueueBackend.allCases)
    func enqueuedMessageIsQueuedAndWaiting(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let message = outbound(to: bob, bytes: 10, flags: 1)
            try await queue.enqueue(message)
            #expect(
                await queue.record(message.id)
                    == OutboundRecord(id: message.id, destination: bob, bytes: 10, status: .queued, flags: 1)
            )
            #expect(await queue.waiting(for: bob) == [message.id])
            #expect(await queue.waiting(for: .random()) == [])
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func claimIsExclusive(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let message = outbound(to: bob, bytes: 7, flags: 1)
            try await queue.enqueue(message)
            #expect(await queue.claim(message.id) == message)
            #expect(await queue.claim(message.id) == nil)
            #expect(await queue.waiting(for: bob) == [])
            #expect(await queue.record(message.id)?.status == .queued)
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func updateToQueuedReleasesTheClaim(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let message = outbound(to: bob)
            try await queue.enqueue(message)
            _ = await queue.claim(message.id)
            await queue.update(message.id, to: .queued, transport: nil, reason: "no route")
            #expect(await queue.waiting(for: bob) == [message.id])
            #expect(await queue.record(message.id)?.reason == "no route")
            #expect(await queue.claim(message.id) == message)
        }
    }

    /// What the router's "does anything still wait for this destination?" reads
    /// (docs/PROTOCOL.md §A.5, "Route requests", *Asking*): queued, claimed or not;
    /// not once sent, relayed or final.
    @Test(arguments: QueueBackend.allCases)
    func holdsUnsentWhileQueuedClaimedOrNot(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let (bob, carol) = (PeerID.random(), PeerID.random())
            let first = outbound(to: bob)
            let second = outbound(to: bob)
            try await queue.enqueue(first)
            try await queue.enqueue(second)
            #expect(await queue.holdsUnsent(for: bob))
            #expect(await !queue.holdsUnsent(for: carol))
            _ = await queue.claim(first.id)
            await queue.update(second.id, to: .delivered, transport: "lo", reason: nil)
            #expect(await queue.holdsUnsent(for: bob), "claimed: being sent, still this node's")
            await queue.update(first.id, to: .sent, transport: "lo", reason: nil)
            #expect(await !queue.holdsUnsent(for: bob))
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func waitingIsOldestFirstPerDestination(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let carol = PeerID.random()
            let messages = [outbound(to: bob), outbound(to: carol), outbound(to: bob), outbound(to: bob)]
            for message in messages { try await queue.enqueue(message) }
            #expect(await queue.waiting(for: bob) == [messages[0].id, messages[2].id, messages[3].id])
            #expect(await queue.waiting(for: carol) == [messages[1].id])
            _ = await queue.claim(messages[2].id)
            #expect(await queue.waiting(for: bob) == [messages[0].id, messages[3].id])
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func deliveredMessageLeavesTheQueueAndKeepsItsRecord(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let message = outbound(to: bob, bytes: 3)
            try await queue.enqueue(message)
            _ = await queue.claim(message.id)
            await queue.update(message.id, to: .delivered, transport: "tcp", reason: nil)
            #expect(
                await queue.record(message.id)
                    == OutboundRecord(
                        id: message.id,
                        destination: bob,
                        bytes: 3,
                        status: .delivered,
                        transport: "tcp",
                        attempts: 1
                    )
            )
            // A final status is final: later updates change nothing.
            await queue.update(message.id, to: .queued, transport: nil, reason: "late")
            await queue.update(message.id, to: .sent, transport: "ble", reason: nil)
            #expect(await queue.record(message.id)?.status == .delivered)
            #expect(await queue.record(message.id)?.transport == "tcp")
            #expect(await queue.waiting(for: bob) == [])
            #expect(await queue.claim(message.id) == nil)
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func sentAndFailedMessagesCannotBeClaimed(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let sent = outbound(to: bob)
            let failed = outbound(to: bob)
            try await queue.enqueue(sent)
            try await queue.enqueue(failed)
            _ = await queue.claim(sent.id)
            _ = await queue.claim(failed.id)
            await queue.update(sent.id, to: .sent, transport: "ble", reason: nil)
            await queue.update(failed.id, to: .failed, transport: nil, reason: "ack timeout on every link")
            #expect(await queue.record(sent.id)?.status == .sent)
            #expect(await queue.record(sent.id)?.transport == "ble")
            #expect(await queue.record(failed.id)?.status == .failed)
            #expect(await queue.record(failed.id)?.reason == "ack timeout on every link")
            #expect(await queue.claim(sent.id) == nil)
            #expect(await queue.claim(failed.id) == nil)
            #expect(await queue.waiting(for: bob) == [])
            // A later receipt moves a sent message on.
            await queue.update(sent.id, to: .delivered, transport: nil, reason: nil)
            #expect(await queue.record(sent.id)?.status == .delivered)
            #expect(await queue.record(sent.id)?.transport == "ble")
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func unknownMessageIsNobodys(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let id = MessageID.random()
            #expect(await queue.claim(id) == nil)
            #expect(await queue.record(id) == nil)
            await queue.update(id, to: .delivered, transport: "tcp", reason: nil)
            #expect(await queue.record(id) == nil)
        }
    }

    /// A `sent` message starts over only when it comes with the neighbour it came back
    /// from (this node's own message, taken back round a loop): then it is queued again
    /// with its payload, in one step; without one it is still pending and refused.
    @Test(arguments: QueueBackend.allCases)
    func aSentMessageStartsOverOnlyWhenTakenBack(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let message = outbound(to: bob, bytes: 9, flags: 1)
            try await queue.enqueue(message)
            _ = await queue.claim(message.id)
            await queue.update(message.id, to: .sent, transport: "lo", reason: nil)
            #expect(await queue.waiting(for: bob) == [])
            let error = await meshError { try await queue.enqueue(message) }
            #expect(error?.code == .invalidArgument)
            var back = message
            back.previousHop = .random()
            try await queue.enqueue(back)
            #expect(await queue.record(message.id)?.status == .queued)
            #expect(await queue.waiting(for: bob) == [message.id])
            #expect(await queue.claim(message.id)?.payload == message.payload)
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func receiptQueuedWithTheMessageOnce(backend: QueueBackend) async throws {
        try await backend.runWithSink { sink, queue throws in
            let alice = PeerID.random()
            let inbound = InboundMessage(id: .random(), from: alice, payload: [1, 2, 3], transport: "tcp")
            let receipt = OutboundMessage(
                id: .random(),
                destination: alice,
                payload: [4, 5],
                flags: DataFrame.receiptFlag
            )
            try await sink.accept(inbound, queueing: receipt, in: queue)
            #expect(await queue.record(receipt.id)?.status == .queued)
            #expect(await queue.waiting(for: alice) == [receipt.id])
            // A second copy of the message (the sender's retry): the waiting receipt stays one.
            try await sink.accept(inbound, queueing: receipt, in: queue)
            #expect(await queue.waiting(for: alice) == [receipt.id])
            // Once it was delivered, a later copy issues it again.
            _ = await queue.claim(receipt.id)
            await queue.update(receipt.id, to: .delivered, transport: "tcp", reason: nil)
            try await sink.accept(inbound, queueing: receipt, in: queue)
            #expect(await queue.record(receipt.id)?.status == .queued)
        }
    }
}
