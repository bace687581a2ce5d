import Foundation
import GRDB
import MeshCore
import Testing

@testable import MeshStore

@Suite("History keeps the text; conversations, unread, clearing, retention")
struct HistoryTextTests {
    @Test("sent and received texts stay in the history after delivery; binary and large payloads keep a head")
    func textKept() async throws {
        try await withStore { store in
            let bob = PeerID.random()
            let sent = OutboundMessage(id: .random(), destination: bob, payload: Array("hello bob".utf8), flags: 0)
            try await store.outbox.enqueue(sent)
            await store.outbox.update(sent.id, to: .delivered, transport: "tcp", reason: nil)
            let received = message(from: bob, "hi there")
            try await store.inbox.append(received)
            let binary = InboundMessage(id: .random(), from: bob, payload: [0xff, 0xfe, 0x00], transport: "tcp")
            try await store.inbox.append(binary)
            let large = InboundMessage(
                id: .random(),
                from: bob,
                payload: Array(repeating: UInt8(ascii: "a"), count: 70_000),
                transport: "tcp"
            )
            try await store.inbox.append(large)

            #expect(try await store.history.entry(sent.id)?.text == "hello bob")
            #expect(try await store.history.entry(received.id, direction: .inbound)?.text == "hi there")
            let binaryEntry = try await store.history.entry(binary.id, direction: .inbound)
            #expect(
                binaryEntry?.text == nil && binaryEntry?.headBase64 == Data([0xff, 0xfe, 0x00]).base64EncodedString()
            )
            let largeEntry = try await store.history.entry(large.id, direction: .inbound)
            #expect(largeEntry?.text == nil)
            #expect(largeEntry?.headBase64.flatMap { Data(base64Encoded: $0) }?.count == MessageHistory.headBytes)
            #expect(try await store.history.entries(matching: "HELLO").map(\.id) == [sent.id])
            #expect(try await store.history.entries(matching: "nothing like it").isEmpty)
        }
    }

    @Test("a conversation lists both directions oldest first; received messages start unread until read")
    func conversationAndUnread() async throws {
        let clock = TestClock()
        try await withStore(clock: clock) { store in
            let bob = PeerID.random()
            let carol = PeerID.random()
            let first = message(from: bob, "one")
            try await store.inbox.append(first)
            clock.advance(by: 1)
            let reply = OutboundMessage(id: .random(), destination: bob, payload: Array("two".utf8), flags: 0)
            try await store.outbox.enqueue(reply)
            clock.advance(by: 1)
            let second = message(from: bob, "three")
            try await store.inbox.append(second)
            try await store.inbox.append(message(from: carol, "other"))
            var published = message(from: bob, "to everyone")
            published.topic = "/scmesh/global/v1"
            try await store.inbox.append(published)

            let conversation = try await store.history.conversation(with: bob)
            #expect(conversation.map(\.text) == ["one", "two", "three"])
            #expect(conversation.map(\.direction) == [.inbound, .outbound, .inbound])
            #expect(try await store.history.conversation(with: bob, limit: 2).map(\.text) == ["two", "three"])
            // The topic message is unread but in no conversation.
            #expect(try await store.history.unreadCount() == 4)
            #expect(try await store.inbox.entries(unread: true).count == 4)
            #expect(try await store.history.markRead([published.id]) == 1)
            let summaries = try await store.history.conversations()
            #expect(summaries.map(\.peer) == [carol, bob])
            #expect(summaries.map(\.unread) == [1, 2])

            #expect(try await store.history.markRead([first.id]) == 1)
            #expect(try await store.history.markRead([first.id]) == 0)
            #expect(try await store.history.unreadCount(peer: bob) == 1)
            let unreadNow = try await store.inbox.entries(unread: true).map(\.message.id)
            #expect(unreadNow.count == 2 && !unreadNow.contains(first.id) && unreadNow.contains(second.id))
            #expect(try await store.history.peers(startingWith: String(bob.hex.prefix(6)).uppercased()) == [bob])
            #expect(try await store.history.peers(startingWith: "").isEmpty)
            #expect(try await store.history.peers(startingWith: "xyz").isEmpty)
            #expect(try await store.history.markRead(peer: bob) == 1)
            #expect(try await store.history.unreadCount() == 1)
            #expect(try await store.history.markRead() == 1)
            #expect(try await store.history.unreadCount() == 0)
        }
    }

    @Test(
        "clear deletes finished entries of one peer or all but keeps messages on their way; delete drops one inbox entry"
    )
    func clearAndDelete() async throws {
        try await withStore { store in
            let bob = PeerID.random()
            let carol = PeerID.random()
            try await store.inbox.append(message(from: bob, "from bob"))
            let carolMessage = try #require(try await store.inbox.append(message(from: carol, "from carol")))
            let waiting = OutboundMessage(id: .random(), destination: bob, payload: Array("wait".utf8), flags: 0)
            try await store.outbox.enqueue(waiting)

            #expect(try await store.history.clear(peer: bob) == 1)
            #expect(try await store.history.entries(peer: bob).map(\.id) == [waiting.id])
            #expect(try await store.history.entries(peer: carol).count == 1)
            #expect(try await store.history.clear() == 1)
            #expect(try await store.history.entries().map(\.id) == [waiting.id])

            #expect(try await store.inbox.count == 2)
            // Deleting an unread message marks it read.
            let late = try #require(try await store.inbox.append(message(from: carol, "late")))
            #expect(try await store.history.unreadCount(peer: carol) == 1)
            #expect(try await store.inbox.delete(sequence: late.sequence))
            #expect(try await store.history.unreadCount(peer: carol) == 0)
            #expect(try await store.inbox.delete(sequence: carolMessage.sequence))
            #expect(try await store.inbox.delete(sequence: carolMessage.sequence) == false)
            #expect(try await store.inbox.entries().map(\.message.from) == [bob])
        }
    }

    @Test("the upkeep deletes finished history older than the retention, by the store's clock")
    func retention() async throws {
        let clock = TestClock()
        var configuration = StoreConfiguration()
        configuration.historyRetention = .seconds(10 * 86_400)
        try await withStore(configuration: configuration, clock: clock) { store in
            let bob = PeerID.random()
            let old = message(from: bob, "old")
            try await store.inbox.append(old)
            let waiting = OutboundMessage(id: .random(), destination: bob, payload: Array("wait".utf8), flags: 0)
            try await store.outbox.enqueue(waiting, expiresAfter: .seconds(30 * 86_400))
            clock.advance(by: 9 * 86_400)
            let recent = message(from: bob, "recent")
            try await store.inbox.append(recent)
            #expect(try await store.maintain().historyPruned == 0)
            clock.advance(by: 2 * 86_400)
            #expect(try await store.maintain().historyPruned == 1)
            let kept = try await store.history.entries().map(\.id)
            #expect(Set(kept) == [recent.id, waiting.id])
        }
    }
}

@Suite("Migrating to history text and unread")
struct HistoryTextMigrationTests {
    @Test("messages received before the migration count as read and keep no text; new ones start unread")
    func olderMessagesCountAsRead() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let bob = PeerID.random()
            let old = MessageID.random()
            do {
                let queue = try DatabaseQueue(path: path)
                try StoreMigrations.migrator.migrate(queue, upTo: StoreMigrations.identifiers[11])
                try queue.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO history (messageID, direction, peer, bytes, status, createdAt, attempts)
                            VALUES (?, 'inbound', ?, 2, 'received', 5, 0)
                            """,
                        arguments: [old.hex, bob.hex]
                    )
                }
                try queue.close()
            }
            try await withReopened(path) { store throws in
                #expect(try await store.schemaVersion() == MeshStore.currentSchemaVersion)
                #expect(try await store.history.unreadCount() == 0)
                let entry = try #require(try await store.history.entry(old, direction: .inbound))
                #expect(entry.text == nil && entry.unread == nil && entry.readAt != nil)
                try await store.inbox.append(message(from: bob, "new"))
                #expect(try await store.history.unreadCount() == 1)
                #expect(try await store.history.conversation(with: bob).map(\.text) == [nil, "new"])
            }
        }
    }
}
