import Foundation
import GRDB
import MeshCore
import Testing

@testable import MeshStore

@Suite("Migrating older store files")
struct StoreMigrationTests {
    @Test("a version-1 store opens migrated to the current schema, its queued message intact")
    func versionOneStoreIsMigrated() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let bob = PeerID.random()
            let message = outbound(to: bob, bytes: 5)
            // A file as a version-1 build left it: the v1 migration alone, one message queued.
            do {
                let queue = try DatabaseQueue(path: path)
                try StoreMigrations.migrator.migrate(queue, upTo: StoreMigrations.identifiers[0])
                try queue.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO history (messageID, direction, peer, bytes, status, createdAt, expiresAt, attempts)
                            VALUES (?, 'outbound', ?, 5, 'queued', 0, ?, 0)
                            """,
                        arguments: [message.id.hex, bob.hex, Int64.max / 2]
                    )
                    try db.execute(
                        sql: """
                            INSERT INTO outbox (historyID, messageID, destination, flags, bytes, claimed, payload)
                            VALUES (?, ?, ?, 0, 5, 0, ?)
                            """,
                        arguments: [db.lastInsertedRowID, message.id.hex, bob.hex, Data(message.payload)]
                    )
                }
                #expect(try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 1)
                try queue.close()
            }
            try await withReopened(path) { store throws in
                #expect(try await store.schemaVersion() == MeshStore.currentSchemaVersion)
                let record = try #require(await store.outbox.record(message.id))
                #expect(record.status == .queued)
                #expect(record.flags == 0)
                #expect(record.contentDigest.isEmpty)
                // The bounds' per-destination share counts the message queued before.
                #expect(try await store.outbox.pendingBytes == 5)
                #expect(await store.outbox.waiting(for: bob) == [message.id])
                #expect(await store.outbox.claim(message.id)?.payload == message.payload)
            }
        }
    }

    @Test("IDs received before the origin key still count as duplicates; the inbox keeps its entries and counter")
    func dedupOriginMigration() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let (alice, old) = (PeerID.random(), MessageID.random())
            do {
                let queue = try DatabaseQueue(path: path)
                try StoreMigrations.migrator.migrate(queue, upTo: StoreMigrations.identifiers[10])
                try queue.write { db in
                    try db.execute(sql: "INSERT INTO dedup (messageID, receivedAt) VALUES (?, 0)", arguments: [old.hex])
                    for sequence in 1...3 {
                        try db.execute(
                            sql: """
                                INSERT INTO inbox (messageID, sender, transport, receivedAt, bytes, payload)
                                VALUES (?, ?, 'lo', 0, 1, ?)
                                """,
                            arguments: [MessageID.random().hex, alice.hex, Data([UInt8(sequence)])]
                        )
                    }
                    try db.execute(sql: "DELETE FROM inbox WHERE sequence = 3")
                }
                try queue.close()
            }
            try await withReopened(path) { store throws in
                #expect(try await store.schemaVersion() == MeshStore.currentSchemaVersion)
                #expect(try await store.dedup.contains(old, from: .random()))
                #expect(try await store.inbox.count == 2)
                let next = try #require(
                    try await store.inbox.append(
                        InboundMessage(id: .random(), from: alice, payload: [9], transport: "lo")
                    )
                )
                #expect(next.sequence == 4)  // never reused
            }
        }
    }
}
