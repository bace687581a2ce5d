import Foundation
import MeshCore
import Testing

@testable import MeshStore

@Suite("Persisted inbox")
struct StoreInboxTests {
    @Test("accepting a message twice stores it once")
    func acceptIsIdempotent() async throws {
        try await withStore { store throws in
            let alice = PeerID.random()
            let hello = message(from: alice, "hello")
            try await store.inbox.accept(hello)
            try await store.inbox.accept(hello)
            // Same ID, different transport: the retry of a hop whose ack was lost.
            try await store.inbox.accept(
                InboundMessage(id: hello.id, from: alice, payload: hello.payload, transport: "ble")
            )
            let entries = try await store.inbox.entries()
            #expect(entries.map(\.message) == [hello])
            #expect(try await store.inbox.count == 1)
            #expect(try await store.inbox.totalReceived == 1)
            #expect(try await store.dedup.contains(hello.id, from: alice))
            #expect(try await store.inbox.append(hello) == nil)
        }
    }

    @Test("an entry keeps the payload, sender, transport and the injected receive time")
    func entryContent() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { store throws in
            let alice = PeerID.random()
            let payload: [UInt8] = [0, 255, 1, 254]
            let sent = InboundMessage(id: .random(), from: alice, payload: payload, transport: "mdns")
            try await store.inbox.accept(sent)
            let entry = try #require(try await store.inbox.entries().first)
            #expect(entry.sequence == 1)
            #expect(entry.message == sent)
            #expect(entry.receivedAt == clock.now)
            #expect(try await store.inbox.byteCount == 4)
            let history = try #require(try await store.history.entry(sent.id, direction: .inbound))
            #expect(history.status == .received)
            #expect(history.peer == alice)
            #expect(history.transport == "mdns")
            #expect(try await store.history.trace(of: sent.id, direction: .inbound).map(\.kind) == [.received])
        }
    }

    @Test("sequence numbers grow across close and reopen and are never reused")
    func sequenceIsMonotonicAcrossRestarts() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let alice = PeerID.random()
            let first = try await withReopened(path) { store throws in
                var sequences: [Int] = []
                for index in 0..<3 {
                    sequences.append(
                        try #require(try await store.inbox.append(message(from: alice, "m\(index)"))).sequence
                    )
                }
                return sequences
            }
            #expect(first == [1, 2, 3])
            try await withReopened(path) { store throws in
                #expect(try await store.inbox.entries().map(\.sequence) == [1, 2, 3])
                #expect(try await store.inbox.append(message(from: alice, "m3"))?.sequence == 4)
                // The reader consumed everything: the numbers are still not reused.
                #expect(try await store.inbox.remove(through: 4) == 4)
                #expect(try await store.inbox.count == 0)
            }
            try await withReopened(path) { store throws in
                #expect(try await store.inbox.totalReceived == 4)
                #expect(try await store.inbox.append(message(from: alice, "m4"))?.sequence == 5)
            }
        }
    }

    @Test("a message accepted before a restart is still a duplicate after it")
    func dedupSurvivesRestart() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let hello = message(from: .random(), "hello")
            try await withReopened(path) { store in try await store.inbox.accept(hello) }
            try await withReopened(path) { store throws in
                try await store.inbox.accept(hello)
                #expect(try await store.inbox.count == 1)
                #expect(try await store.inbox.totalReceived == 1)
            }
        }
    }

    @Test("entries(after:limit:) polls like the in-memory inbox")
    func entriesAfterAndLimit() async throws {
        try await withStore { store throws in
            let alice = PeerID.random()
            for index in 1...5 { try await store.inbox.accept(message(from: alice, "m\(index)")) }
            #expect(try await store.inbox.entries().map(\.sequence) == [1, 2, 3, 4, 5])
            #expect(try await store.inbox.entries(after: 2).map(\.sequence) == [3, 4, 5])
            #expect(try await store.inbox.entries(limit: 2).map(\.sequence) == [4, 5])
            #expect(try await store.inbox.entries(after: 1, limit: 2).map(\.sequence) == [4, 5])
            #expect(try await store.inbox.entries(after: 5).isEmpty)
            #expect(try await store.inbox.entries(limit: 0).isEmpty)
            #expect(
                try await store.inbox.entries().map { String(decoding: $0.message.payload, as: UTF8.self) } == [
                    "m1", "m2", "m3", "m4", "m5",
                ]
            )
        }
    }

    @Test("over the message bound, the sender holding the most loses its oldest messages")
    func perSenderShareByCount() async throws {
        var configuration = StoreConfiguration()
        configuration.inboxCapacity = 10
        try await withStore(configuration: configuration) { store throws in
            let flooder = PeerID.random()
            let bob = PeerID.random()
            let carol = PeerID.random()
            try await store.inbox.accept(message(from: bob, "bob 1"))
            try await store.inbox.accept(message(from: carol, "carol 1"))
            var flood: [InboundMessage] = []
            for index in 0..<20 {
                let next = message(from: flooder, "flood \(index)")
                flood.append(next)
                try await store.inbox.accept(next)
            }
            try await store.inbox.accept(message(from: bob, "bob 2"))
            let texts = try await store.inbox.entries().map { String(decoding: $0.message.payload, as: UTF8.self) }
            #expect(texts.count == 10)
            #expect(texts.contains("bob 1") && texts.contains("bob 2") && texts.contains("carol 1"))
            #expect(texts.filter { $0.hasPrefix("flood") } == (13..<20).map { "flood \($0)" })
            let shares = try await store.inbox.shares()
            #expect(shares[flooder]?.messages == 7)
            #expect(shares[bob]?.messages == 2)
            // A dropped message stays known: a late copy is not delivered again.
            #expect(try await store.inbox.append(flood[0]) == nil)
            #expect(try await store.inbox.totalReceived == 23)
        }
    }

    @Test("over the byte bound, the sender holding the most bytes loses its oldest messages")
    func perSenderShareByBytes() async throws {
        var configuration = StoreConfiguration()
        configuration.inboxMaxBytes = 1_000
        try await withStore(configuration: configuration) { store throws in
            let big = PeerID.random()
            let small = PeerID.random()
            // `small` sends more messages, `big` more bytes: the byte bound picks `big`.
            for index in 0..<5 { try await store.inbox.accept(message(from: small, "s\(index)")) }
            for index in 0..<4 {
                try await store.inbox.accept(
                    InboundMessage(
                        id: .random(),
                        from: big,
                        payload: Array(repeating: UInt8(index), count: 300),
                        transport: "tcp"
                    )
                )
            }
            let shares = try await store.inbox.shares()
            #expect(shares[small]?.messages == 5)
            #expect(shares[big]?.messages == 3)
            #expect(try await store.inbox.byteCount <= 1_000)
            #expect(
                try await store.inbox.entries().filter { $0.message.from == big }.map { $0.message.payload[0] } == [
                    1, 2, 3,
                ]
            )
        }
    }

    @Test("a message larger than the byte bound is kept alone, not dropped on arrival")
    func oversizedMessageIsKept() async throws {
        var configuration = StoreConfiguration()
        configuration.inboxMaxBytes = 100
        try await withStore(configuration: configuration) { store throws in
            let alice = PeerID.random()
            try await store.inbox.accept(message(from: alice, "small"))
            let huge = InboundMessage(
                id: .random(),
                from: alice,
                payload: Array(repeating: 7, count: 500),
                transport: "tcp"
            )
            try await store.inbox.accept(huge)
            #expect(try await store.inbox.entries().map(\.message) == [huge])
        }
    }
}
