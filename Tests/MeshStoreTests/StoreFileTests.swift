import Foundation
import GRDB
import MeshCore
import Testing

@testable import MeshStore

@Suite("Opening the store file")
struct StoreFileTests {
    @Test("a new store has the current schema version, WAL, synchronous FULL and foreign keys")
    func newStore() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            try await withReopened(path) { store throws in
                #expect(try await store.schemaVersion() == MeshStore.currentSchemaVersion)
                #expect(MeshStore.currentSchemaVersion == 18)
            }
            let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            // Reopening an existing store migrates nothing and keeps the version.
            try await withReopened(path) { store throws in
                #expect(try await store.schemaVersion() == 18)
            }
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            try queue.read { db throws in
                #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal")
                #expect(try Int32.fetchOne(db, sql: "PRAGMA application_id") == 0x5343_4D53)
                #expect(
                    try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
                        == StoreMigrations.identifiers
                )
            }
        }
        try await withStore { store throws in
            let settings = try await store.inbox.database.write("read pragmas") { db in
                (try Int.fetchOne(db, sql: "PRAGMA synchronous"), try Bool.fetchOne(db, sql: "PRAGMA foreign_keys"))
            }
            #expect(settings.0 == 2)
            #expect(settings.1 == true)
        }
    }

    @Test("a zero-length file becomes a store")
    func emptyFile() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            #expect(FileManager.default.createFile(atPath: path, contents: Data()))
            try await withReopened(path) { store throws in
                try await store.inbox.accept(message(from: .random(), "hi"))
            }
        }
    }

    @Test("random bytes: refused as not an SQLite database, file untouched")
    func corruptFile() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let garbage = Data((0..<8192).map { _ in UInt8.random(in: 0...255) })
            #expect(FileManager.default.createFile(atPath: path, contents: garbage))
            let error = await meshError { _ = try MeshStore(path: path) }
            #expect(error?.code == .storeCorrupt)
            #expect(error?.message.contains("\(path) is not an SQLite database") == true)
            #expect(error?.message.contains("left it untouched") == true)
            #expect(fileBytes(path) == garbage)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["store.sqlite"])
        }
    }

    @Test("a damaged SCMesh store: refused by the integrity check, file untouched")
    func damagedStore() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            try await withReopened(path) { store throws in
                for index in 0..<200 {
                    try await store.inbox.accept(
                        InboundMessage(
                            id: .random(),
                            from: .random(),
                            payload: Array(repeating: UInt8(index % 256), count: 2_000),
                            transport: "tcp"
                        )
                    )
                }
            }
            var bytes = try #require(fileBytes(path))
            let pageSize = 4096
            #expect(bytes.count > 20 * pageSize)
            // Overwrite pages 3 to 6 (b-tree pages of the tables) with noise.
            for offset in (2 * pageSize)..<(6 * pageSize) { bytes[offset] = UInt8.random(in: 0...255) }
            try bytes.write(to: URL(fileURLWithPath: path))
            let error = await meshError { _ = try MeshStore(path: path) }
            #expect(error?.code == .storeCorrupt)
            #expect(error?.message.contains("damaged") == true)
            #expect(fileBytes(path) == bytes)
        }
    }

    @Test("another program's SQLite database: refused as foreign, file untouched")
    func foreignDatabase() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/notes.sqlite"
            let queue = try DatabaseQueue(path: path)
            try queue.write { db throws in
                try db.execute(
                    sql:
                        "CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO note(text) VALUES ('keep me')"
                )
            }
            try queue.close()
            let before = try #require(fileBytes(path))
            let error = await meshError { _ = try MeshStore(path: path) }
            #expect(error?.code == .storeForeign)
            #expect(error?.message.contains("another program") == true)
            #expect(error?.message.contains("note") == true)
            #expect(fileBytes(path) == before)
        }
    }

    @Test("an SQLite file with another application_id: refused as foreign, file untouched")
    func foreignApplicationID() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/other.sqlite"
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db throws in try db.execute(sql: "PRAGMA application_id = 1234") }
            try queue.close()
            let before = try #require(fileBytes(path))
            let error = await meshError { _ = try MeshStore(path: path) }
            #expect(error?.code == .storeForeign)
            #expect(error?.message.contains("application_id is 0x4d2") == true)
            #expect(fileBytes(path) == before)
        }
    }

    @Test("a store written by a newer SCMesh: refused, file untouched")
    func newerSchema() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            try await withReopened(path) { store in try await store.inbox.accept(message(from: .random(), "hi")) }
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db throws in
                try db.execute(
                    sql: "PRAGMA user_version = \(MeshStore.currentSchemaVersion + 1); PRAGMA journal_mode = DELETE"
                )
            }
            try queue.close()
            let before = try #require(fileBytes(path))
            let error = await meshError { _ = try MeshStore(path: path) }
            #expect(error?.code == .storeTooNew)
            #expect(error?.message.contains("schema version \(MeshStore.currentSchemaVersion + 1)") == true)
            #expect(fileBytes(path) == before)
        }
    }

    @Test("a missing directory or a directory path is a clear error")
    func badPaths() async throws {
        try await withTemporaryDirectory { directory throws in
            var error = await meshError { _ = try MeshStore(path: directory + "/missing/store.sqlite") }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("does not exist") == true)
            error = await meshError { _ = try MeshStore(path: directory) }
            #expect(error?.message.contains("is a directory") == true)
        }
    }

    @Test("a closed store refuses work with notRunning")
    func closedStore() async throws {
        try await withTemporaryDirectory { directory throws in
            let store = try MeshStore(path: directory + "/store.sqlite")
            try store.close()
            let error = await meshError { try await store.inbox.accept(message(from: .random(), "late")) }
            #expect(error?.code == .notRunning, "\(String(describing: error))")
            #expect(await store.outbox.waiting(for: .random()) == [])
        }
    }

    @Test("a bad configuration is refused")
    func badConfiguration() async throws {
        var configuration = StoreConfiguration()
        configuration.outboxMaxMessagesPerPeer = 0
        try await withTemporaryDirectory { directory throws in
            let error = await meshError {
                _ = try MeshStore(path: directory + "/store.sqlite", configuration: configuration)
            }
            #expect(error?.code == .invalidConfiguration)
            #expect(error?.message.contains("outboxMaxMessagesPerPeer") == true)
        }
    }
}

@Suite("Store configuration")
struct StoreConfigurationTests {
    @Test("the defaults are valid: 7 days of expiry, 8 days of dedup")
    func defaults() throws {
        let configuration = StoreConfiguration()
        try configuration.validate()
        #expect(configuration.defaultExpiry == .seconds(7 * 86_400))
        #expect(configuration.dedupRetention == .seconds(8 * 86_400))
    }

    @Test("dedup retention shorter than the expiry is refused")
    func dedupShorterThanExpiry() {
        var configuration = StoreConfiguration()
        configuration.defaultExpiry = .seconds(30 * 86_400)
        #expect(throws: MeshError.self) { try configuration.validate() }
    }
}
