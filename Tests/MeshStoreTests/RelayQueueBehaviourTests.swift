import MeshCore
import Testing

@testable import MeshStore

/// The outbound queue as the relay queue (docs/PROTOCOL.md §A.6), in memory and in
/// SQLite: a relayed message keeps its origin and TTL through claim and record, and is
/// known in every status (the relay's duplicate check); a payload sealed for a relay
/// replaces the queued one, and only while the message waits.
@Suite("Relay queue behaviour, in memory and SQLite")
struct RelayQueueBehaviourTests {
    @Test(arguments: QueueBackend.allCases)
    func relayedMessagesKeepOriginAndTTL(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let origin = PeerID.random()
            let destination = PeerID.random()
            let hop = PeerID.random()
            let message = OutboundMessage(
                id: .random(),
                destination: destination,
                payload: [9, 8, 7],
                flags: 1,
                origin: origin,
                ttl: 5,
                previousHop: hop
            )
            try await queue.enqueue(message)
            let record = try #require(await queue.record(message.id))
            #expect(record.origin == origin)
            #expect(record.previousHop == hop)
            #expect(record.ttl == 5)
            #expect(record.status == .queued)
            let claimed = try #require(await queue.claim(message.id))
            #expect(claimed == message)
            #expect(claimed.isRelayed)
            await queue.update(message.id, to: .relayed, transport: "lo", reason: nil)
            let done = try #require(await queue.record(message.id))
            #expect(done.status == .relayed && done.status.isFinal)
            #expect(done.origin == origin)
            // The neighbour it came from and its TTL outlive the message's custody (the
            // loop rule).
            #expect(done.previousHop == hop)
            #expect(done.ttl == 5)
            // Final: a later update does not change it.
            await queue.update(message.id, to: .queued, transport: nil, reason: nil)
            #expect(await queue.record(message.id)?.status == .relayed)
            // This node's own messages have no origin and no TTL of their own.
            let own = outbound(to: destination)
            try await queue.enqueue(own)
            #expect(await queue.record(own.id)?.origin == nil)
            #expect(await queue.record(own.id)?.ttl == nil)
            #expect(await queue.claim(own.id)?.ttl == nil)
        }
    }

    @Test(arguments: QueueBackend.allCases)
    func replacingThePayloadKeepsIDDigestAndStatus(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let bob = PeerID.random()
            let message = OutboundMessage(
                id: .random(),
                destination: bob,
                payload: [1, 2],
                flags: 0,
                contentDigest: [7, 7]
            )
            try await queue.enqueue(message)
            _ = await queue.claim(message.id)
            try await queue.replacePayload(message.id, with: [1, 2, 3, 4, 5], flags: 1)
            await queue.update(message.id, to: .queued, transport: nil, reason: "retry")
            let again = try #require(await queue.claim(message.id))
            #expect(again.payload == [1, 2, 3, 4, 5])
            #expect(again.flags == 1)
            #expect(again.contentDigest == [7, 7])
            let record = try #require(await queue.record(message.id))
            // The record keeps the payload's size; only the wire bytes were sealed.
            #expect(record.bytes == 2 && record.flags == 1 && record.contentDigest == [7, 7])
            await queue.update(message.id, to: .sent, transport: "lo", reason: nil)
            // Sent: the payload left the queue; nothing to replace.
            await #expect(throws: MeshError.self) { try await queue.replacePayload(message.id, with: [0], flags: 1) }
            await #expect(throws: MeshError.self) { try await queue.replacePayload(.random(), with: [0], flags: 1) }
        }
    }

    /// A relayed flood copy that took a hop's custody goes on with the TTL that custody
    /// came with (docs/PROTOCOL.md §A.9): the replacement sets it in the message and its
    /// record; a replacement without a TTL keeps it.
    @Test(arguments: QueueBackend.allCases)
    func replacingThePayloadCanRaiseARelayedMessagesTTL(backend: QueueBackend) async throws {
        try await backend.run { queue throws in
            let flood = DataFrame.sealedFlag | DataFrame.floodFlag
            let message = OutboundMessage(
                id: .random(),
                destination: .random(),
                payload: [1, 2],
                flags: flood,
                origin: .random(),
                ttl: 2,
                previousHop: .random()
            )
            try await queue.enqueue(message)
            try await queue.replacePayload(
                message.id,
                with: [1, 2],
                flags: flood | DataFrame.floodStartedLocalFlag,
                ttl: 29
            )
            #expect(await queue.record(message.id)?.ttl == 29)
            #expect(try #require(await queue.claim(message.id)).ttl == 29)
            await queue.update(message.id, to: .queued, transport: nil, reason: "retry")
            try await queue.replacePayload(message.id, with: [3], flags: flood)
            #expect(try #require(await queue.claim(message.id)).ttl == 29)
            // This node's own message keeps no TTL in its record.
            let own = OutboundMessage(id: .random(), destination: .random(), payload: [1], flags: 1, contentDigest: [7])
            try await queue.enqueue(own)
            try await queue.replacePayload(own.id, with: [2], flags: 1, ttl: 9)
            #expect(await queue.record(own.id)?.ttl == nil)
        }
    }
}
