import Foundation
import GRDB
import MeshCore
import Testing

@testable import MeshStore

// Received payloads of `inboxFileThreshold` bytes or more live in files beside the
// store; custody and exactly-once must hold across a crash at every step.

@Suite("Large inbox payloads in files")
struct InboxPayloadFileTests {
    static func configuration(maxBytes: Int = 256 << 20) -> StoreConfiguration {
        var configuration = StoreConfiguration()
        configuration.inboxFileThreshold = 1_000
        configuration.inboxMaxBytes = maxBytes
        return configuration
    }

    static func large(from peer: PeerID, bytes: Int = 5_000, seed: Int = 7) -> InboundMessage {
        InboundMessage(
            id: .random(),
            from: peer,
            payload: (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* seed &+ 3) },
            transport: "tcp"
        )
    }

    /// The files in the store's payload directory.
    static func files(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path + "-payloads").sorted()
    }

    @Test(
        "a large payload goes to a file (the row keeps none), a small one to its row; both read back byte for byte, also after a reopen and in pieces"
    )
    func roundTrip() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let alice = PeerID.random()
            let big = Self.large(from: alice)
            let small = message(from: alice, "hello")
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                #expect(try await store.inbox.append(big)?.sequence == 1)
                #expect(try await store.inbox.append(small)?.sequence == 2)
                let names = try Self.files(path)
                #expect(names.count == 1 && names[0].hasPrefix("inbox-\(big.id.hex)-"), "\(names)")
                let stored = try await store.database.read("rows") { db in
                    try Row.fetchAll(
                        db,
                        sql: "SELECT length(payload) AS inRow, payloadFile FROM inbox ORDER BY sequence"
                    )
                    .map { row -> [String?] in [String(row["inRow"] as Int), row["payloadFile"]] }
                }
                #expect(stored == [["0", names[0]], ["5", nil]])
                #expect(try await store.inbox.byteCount == 5_005)
            }
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                // The reopen's orphan sweep keeps the file a row names.
                #expect(try Self.files(path).count == 1)
                let entries = try await store.inbox.entries()
                #expect(entries.map(\.message.payload) == [big.payload, small.payload])
                #expect(entries.map(\.message.id) == [big.id, small.id])
                #expect(try await store.inbox.entry(sequence: 1)?.message.payload == big.payload)
                let download = try #require(try await store.inbox.payload(sequence: 1))
                #expect(download.id == big.id && download.from == alice && download.byteCount == 5_000)
                guard case .file(let file) = download.source else {
                    Issue.record("a large payload is not downloaded from its file")
                    return
                }
                var read: [UInt8] = []
                while read.count < file.byteCount { read += try await file.read(at: read.count, upTo: 1_536) }
                #expect(read == big.payload)
                #expect(try await file.read(at: 5_000, upTo: 10).isEmpty)
                let inline = try #require(try await store.inbox.payload(sequence: 2))
                guard case .bytes(let bytes) = inline.source else {
                    Issue.record("a small payload is not in its row")
                    return
                }
                #expect(bytes == small.payload)
                #expect(try await store.inbox.payload(sequence: 3) == nil)
            }
        }
    }

    @Test("a copy of a message already stored is acknowledged without writing a second file")
    func duplicateWritesNoFile() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let big = Self.large(from: .random())
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                #expect(try await store.inbox.append(big) != nil)
                #expect(try await store.inbox.append(big) == nil)
                try await store.inbox.accept(big)
                #expect(try await store.inbox.count == 1)
                #expect(try Self.files(path).count == 1)
            }
        }
    }

    @Test(
        "killed between the file and the row: nothing is delivered, the orphan file goes at the next open, and the sender's retry is stored exactly once"
    )
    func crashBetweenFileAndRow() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let big = Self.large(from: .random())
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                store.database.faults.crash(.inboxFileWritten)
                await #expect(throws: MeshError.self) { try await store.inbox.accept(big) }
                // As a killed process leaves it: the synced file, no row, no dedup record.
                #expect(try Self.files(path).count == 1)
                #expect(try await store.inbox.count == 0)
                #expect(try await store.dedup.contains(big.id, from: big.from) == false)
            }
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                #expect(try Self.files(path).isEmpty)
                // The sender was never acknowledged: it retries, once stored, then a copy.
                #expect(try await store.inbox.append(big)?.message.payload == big.payload)
                #expect(try await store.inbox.append(big) == nil)
                #expect(try await store.inbox.count == 1)
                #expect(try Self.files(path).count == 1)
                #expect(try await store.inbox.entries().map(\.message.payload) == [big.payload])
            }
        }
    }

    @Test(
        "killed between deleting the rows and removing their files: the entries stay gone, the files go at the next open; a failed insert leaves no file"
    )
    func crashBetweenRowAndFileRemoval() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let alice = PeerID.random()
            let (first, second) = (Self.large(from: alice), Self.large(from: alice, seed: 11))
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                try await store.inbox.append(first)
                try await store.inbox.append(second)
                #expect(try Self.files(path).count == 2)
                store.database.faults.crash(.inboxRowsDeleted)
                await #expect(throws: MeshError.self) { try await store.inbox.remove(through: 1) }
                #expect(try Self.files(path).count == 2)
                #expect(try await store.inbox.entries().map(\.message.id) == [second.id])
            }
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                let names = try Self.files(path)
                #expect(names.count == 1 && names[0].hasPrefix("inbox-\(second.id.hex)-"), "\(names)")
                #expect(try await store.inbox.remove(through: 2) == 1)
                #expect(try Self.files(path).isEmpty)
                // A transaction that fails after the file was written removes the file.
                try await store.database.write("break inserts") { db in
                    try db.execute(
                        sql:
                            "CREATE TRIGGER refuse BEFORE INSERT ON inbox BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
                    )
                }
                let refused = Self.large(from: alice, seed: 13)
                await #expect(throws: MeshError.self) { try await store.inbox.append(refused) }
                #expect(try Self.files(path).isEmpty)
                #expect(try await store.dedup.contains(refused.id, from: refused.from) == false)
            }
        }
    }

    @Test("a message the byte bound drops takes its file with it")
    func boundsRemoveFiles() async throws {
        try await withStore(configuration: Self.configuration(maxBytes: 12_000)) { store throws in
            let alice = PeerID.random()
            let messages = (0..<3).map { Self.large(from: alice, seed: 3 + $0 * 2) }
            for message in messages { try await store.inbox.append(message) }
            let names = try Self.files(store.path)
            #expect(names.count == 2)
            #expect(!names.contains { $0.hasPrefix("inbox-\(messages[0].id.hex)") })
            #expect(try await store.inbox.entries().map(\.message.payload) == messages.dropFirst().map(\.payload))
        }
    }

    @Test("a payload file missing under a row that still exists is reported as damage, naming the file")
    func missingFileIsCorruption() async throws {
        try await withStore(configuration: Self.configuration()) { store throws in
            try await store.inbox.append(Self.large(from: .random()))
            let name = try #require(try Self.files(store.path).first)
            unlink(store.path + "-payloads/" + name)
            do {
                _ = try await store.inbox.entries()
                Issue.record("a missing payload file went unnoticed")
            } catch let error as MeshError {
                #expect(error.code == .storeCorrupt)
                #expect(error.message.contains(name), "\(error.message)")
            }
            await #expect(throws: MeshError.self) { _ = try await store.inbox.payload(sequence: 1) }
            await #expect(throws: MeshError.self) { _ = try await store.inbox.summaries(headBytes: 16) }
        }
    }

    @Test(
        "a listing without payloads reads only the first bytes of a payload kept in a file, a payload kept in its row whole; after and limit as for entries"
    )
    func summariesReadOnlyTheHead() async throws {
        try await withStore(configuration: Self.configuration()) { store throws in
            let alice = PeerID.random()
            let big = Self.large(from: alice)
            let small = message(from: alice, "hello")
            try await store.inbox.append(big)
            try await store.inbox.append(small)
            let summaries = try await store.inbox.summaries(headBytes: 64)
            #expect(summaries.map(\.sequence) == [1, 2])
            #expect(summaries.map(\.byteCount) == [5_000, 5])
            #expect(summaries.map(\.id) == [big.id, small.id])
            #expect(
                summaries.allSatisfy { $0.from == alice && $0.transport == "tcp" && !$0.emergency && $0.topic == nil }
            )
            #expect(summaries[0].head == Array(big.payload.prefix(64)) && !summaries[0].isWhole)
            #expect(summaries[1].head == small.payload && summaries[1].isWhole)
            #expect(try await store.inbox.summaries(after: 1, headBytes: 64).map(\.sequence) == [2])
            #expect(try await store.inbox.summaries(limit: 1, headBytes: 64).map(\.sequence) == [2])
            #expect(try await store.inbox.summaries(headBytes: 10_000)[0].head == big.payload)
        }
    }

    @Test(
        "a version-7 store opens migrated, its inbox entries (payloads in their rows) intact; new large ones go to files"
    )
    func versionSevenStoreIsMigrated() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let alice = PeerID.random()
            let old = Self.large(from: alice)
            do {
                let queue = try DatabaseQueue(path: path)
                try StoreMigrations.migrator.migrate(queue, upTo: StoreMigrations.identifiers[6])
                try queue.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO inbox (messageID, sender, transport, receivedAt, bytes, payload)
                            VALUES (?, ?, 'tcp', 0, ?, ?)
                            """,
                        arguments: [old.id.hex, alice.hex, old.payload.count, Data(old.payload)]
                    )
                }
                #expect(try queue.read { try Int.fetchOne($0, sql: "PRAGMA user_version") } == 7)
                try queue.close()
            }
            try await withReopened(path, configuration: Self.configuration()) { store throws in
                #expect(try await store.schemaVersion() == MeshStore.currentSchemaVersion)
                let new = Self.large(from: alice, seed: 5)
                try await store.inbox.append(new)
                #expect(try await store.inbox.entries().map(\.message.payload) == [old.payload, new.payload])
                #expect(try Self.files(path).count == 1)
            }
        }
    }
}
