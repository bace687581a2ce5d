import Foundation
import GRDB
import MeshCore

/// The checks made before a store file is opened for writing, so that a file that is
/// not a healthy SCMesh store is refused with an explanation and left exactly as it was
/// — never initialised over, never switched to WAL mode.
enum StoreFile {
    enum State {
        /// No file: a new store is created.
        case absent
        /// A zero-length file, or an SQLite database with nothing in it: initialised.
        case empty
        /// An SCMesh store of a schema this build knows, which passed the integrity check.
        case ours
    }

    static let sqliteMagic = Array("SQLite format 3\0".utf8)

    static func inspect(_ path: String) throws(MeshError) -> State {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            guard FileManager.default.fileExists(atPath: directory) else {
                throw MeshError(
                    .invalidArgument,
                    "cannot create store \(path): directory \(directory) does not exist; create it first"
                )
            }
            return .absent
        }
        guard !isDirectory.boolValue else {
            throw MeshError(
                .invalidArgument,
                "store path \(path) is a directory; give the path of a file (DATA-DIR/store.sqlite)"
            )
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw MeshError(.storeFailed, "store \(path) cannot be read; check its owner and permissions")
        }
        let header = (try? handle.read(upToCount: 100)) ?? Data()
        try? handle.close()
        if header.isEmpty { return .empty }
        guard header.count == 100, Array(header.prefix(16)) == sqliteMagic else {
            throw MeshError(
                .storeCorrupt,
                "store \(path) is not an SQLite database (its first bytes are not an SQLite header): it is damaged or another program's file. SCMesh left it untouched; move it away (or restore a backup) and start again to create a new store"
            )
        }
        return try inspectDatabase(path)
    }

    /// Asks SQLite, through a read-only connection, whose database this is.
    private static func inspectDatabase(_ path: String) throws(MeshError) -> State {
        var configuration = GRDB.Configuration()
        configuration.readonly = true
        configuration.label = "scmesh.store.check"
        let facts: (applicationID: Int32, version: Int, objects: [String], problems: [String])
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            facts = try queue.read { db in
                let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                var objects = try String.fetchAll(
                    db,
                    sql: "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type DESC, name"
                )
                // GRDB creates its (empty) migrations table before the first migration's
                // transaction: a node killed in between leaves just that behind.
                if objects == ["grdb_migrations"],
                    try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM grdb_migrations") == 0
                {
                    objects = []
                }
                // Only our own file is checked page by page: a foreign one is refused anyway.
                let problems =
                    applicationID == StoreMigrations.applicationID
                    ? try String.fetchAll(db, sql: "PRAGMA quick_check(10)").filter { $0 != "ok" } : []
                return (applicationID, version, objects, problems)
            }
        } catch {
            let detail = (error as? DatabaseError)?.message ?? "\(error)"
            throw MeshError(
                .storeCorrupt,
                "store \(path) cannot be read as an SQLite database (\(detail)): it is damaged. SCMesh left it untouched; move it away (or restore a backup) and start again to create a new store",
                cause: error
            )
        }
        guard facts.applicationID == StoreMigrations.applicationID else {
            if facts.applicationID == 0 && facts.objects.isEmpty { return .empty }
            let what =
                facts.applicationID != 0
                ? "its SQLite application_id is 0x\(String(UInt32(bitPattern: facts.applicationID), radix: 16)), not SCMesh's"
                : "it holds \(facts.objects.prefix(6).joined(separator: ", "))\(facts.objects.count > 6 ? ", …" : "") and no SCMesh schema"
            throw MeshError(
                .storeForeign,
                "\(path) is an SQLite database of another program, not an SCMesh store (\(what)). SCMesh left it untouched; give the node another data directory or move the file away"
            )
        }
        guard facts.version <= StoreMigrations.currentVersion else {
            throw MeshError(
                .storeTooNew,
                "store \(path) has schema version \(facts.version), written by a newer SCMesh; this build knows up to version \(StoreMigrations.currentVersion). Run the newer scmesh, or move the file away to start an empty store"
            )
        }
        guard facts.problems.isEmpty else {
            throw MeshError(
                .storeCorrupt,
                "store \(path) is damaged: SQLite's integrity check reports \(facts.problems.prefix(3).joined(separator: "; ")). SCMesh left it untouched; stop the node, move the file away (or restore a backup) and start again"
            )
        }
        return .ours
    }
}
