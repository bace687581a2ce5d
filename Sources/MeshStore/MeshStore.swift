import Foundation
import GRDB
import Logging
import MeshCore

/// A node's durable store: one SQLite file (the node uses `DATA-DIR/store.sqlite`)
/// holding the inbox, the outbox with its history and traces, the dedup log of received
/// message IDs, the contacts and the address ledger.
///
/// The file is opened in WAL mode with `synchronous = FULL`, so every commit is on disk
/// when the call that made it returns, and with foreign keys on. Its schema is built and
/// upgraded by named migrations (``schemaVersion()``). A file that is not a healthy
/// SCMesh store — damaged, another program's SQLite database, or written by a newer
/// SCMesh — is refused with a ``MeshError`` that says what it is and what to do, and left
/// untouched: the store never starts empty over existing data.
///
/// ```swift
/// let store = try MeshStore(path: dataDirectory + "/store.sqlite")
/// let router = Router(security: security, sink: store.inbox, queue: store.outbox, logger: logger)
/// ```
///
/// MeshCore does not know this type: the router talks to ``inbox`` as a ``MessageSink``
/// and to ``outbox`` as an ``OutboundQueue``.
public final class MeshStore: Sendable {
    /// The schema version this build writes (the number of migrations it knows).
    public static let currentSchemaVersion = StoreMigrations.currentVersion

    /// The store file's path.
    public let path: String
    /// The bounds and retention times in force.
    public let configuration: StoreConfiguration
    /// The persisted inbox, the router's message sink.
    public let inbox: StoreInbox
    /// The persisted outbox, the router's outbound queue.
    public let outbox: StoreOutbox
    /// Every message sent or received, with its trace.
    public let history: MessageHistory
    /// Received message IDs, for exactly-once delivery.
    public let dedup: DedupLog
    /// The contact book and the allow-list setting.
    public let contacts: Contacts
    /// Which addresses of which peers worked.
    public let ledger: AddressLedger
    /// The invitations this node issued and who joined by them.
    public let invitations: IssuedInvitations
    /// Topic subscriptions and seen topic message IDs, the router's `TopicStore`.
    public let topics: StoreTopics
    /// The flood duplicate cache (the router's ``FloodSeenStore``).
    public let floodSeen: FloodSeenLog
    /// The sequences of this node's own route announcements, kept across restarts.
    public let announceState: AnnounceStateLog
    /// The route table, kept across restarts.
    public let routeTable: RouteTableLog
    /// The messages a store file of an older SCMesh marked as being sent when it was
    /// last closed (or the node killed), queued again by this open. Claims are kept in
    /// memory now, so a message being sent when the node stopped is simply queued.
    public let requeuedAtOpen: [MessageID]

    let database: StoreDatabase

    /// Opens the store at `path`, creating it if there is no file (mode 0600; the
    /// directory must exist), and upgrading its schema if an older SCMesh wrote it.
    /// - Parameters:
    ///   - path: the SQLite file.
    ///   - configuration: bounds and retention times.
    ///   - clock: the wall clock used for timestamps and expiry; tests inject their own.
    ///   - logger: where storage failures of the non-throwing outbox calls are logged.
    /// - Throws: ``MeshError`` with code `.storeCorrupt` (not an SQLite file, or damaged),
    ///   `.storeForeign` (another program's database), `.storeTooNew` (newer schema),
    ///   `.invalidConfiguration`, `.invalidArgument` (no such directory) or `.storeFailed`.
    public init(
        path: String,
        configuration: StoreConfiguration = StoreConfiguration(),
        clock: @escaping @Sendable () -> Date = { Date() },
        logger: Logger = Logger(label: "scmesh.store")
    ) throws(MeshError) {
        try configuration.validate()
        let state = try StoreFile.inspect(path)
        if state == .absent {
            // Messages are private: owner-only from the start (SQLite gives the -wal and
            // -shm files the same mode).
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        var grdb = GRDB.Configuration()
        grdb.label = "scmesh.store"
        grdb.foreignKeysEnabled = true
        grdb.busyMode = .timeout(10)
        grdb.prepareDatabase { db in
            // Savepoint journals and sorts stay in memory: each write of a group commit
            // runs in a savepoint, and a journal spilled to a temporary file costs a
            // system call per page.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: grdb)
        } catch {
            throw storeError(error, path: path, doing: "open the store")
        }
        do {
            try pool.writeWithoutTransaction { db in
                // GRDB sets NORMAL with WAL: a commit then survives a crash of the process
                // but not of the machine. FULL syncs the WAL at every commit, so what a
                // call committed (a message the router acknowledges) survives power loss.
                try db.execute(sql: "PRAGMA synchronous = FULL")
                guard try Int.fetchOne(db, sql: "PRAGMA synchronous") == 2 else {
                    throw MeshError(.storeFailed, "store \(path): SQLite refused synchronous = FULL")
                }
            }
            try StoreMigrations.migrator.migrate(pool)
            let now = Millis.from(clock())
            requeuedAtOpen = try pool.write { db in try StoreOutbox.releaseClaims(db, now: now) }
            // Large outbox and inbox payloads live in files beside the store; a crash
            // can leave one that no row names.
            let files = OutboxPayloadFiles(storePath: path)
            try files.prepare()
            let named = try pool.read { db in
                try StoreOutbox.payloadFileNames(db).union(StoreInbox.payloadFileNames(db))
            }
            let orphans = files.removeOrphans(keeping: named)
            if orphans > 0 {
                logger.notice("store \(path): removed \(orphans) payload files no message named (left by a crash)")
            }
        } catch {
            try? pool.close()
            throw storeError(error, path: path, doing: state == .ours ? "upgrade the store" : "create the store")
        }
        database = StoreDatabase(
            pool: pool,
            path: path,
            configuration: configuration,
            clock: clock,
            logger: logger,
            closed: .init(),
            faults: .init(),
            committer: GroupCommit(pool: pool),
            claims: OutboxClaims()
        )
        self.path = path
        self.configuration = configuration
        inbox = StoreInbox(database: database)
        outbox = StoreOutbox(database: database)
        history = MessageHistory(database: database)
        dedup = DedupLog(database: database)
        contacts = Contacts(database: database)
        ledger = AddressLedger(database: database)
        invitations = IssuedInvitations(database: database)
        topics = StoreTopics(database: database)
        floodSeen = FloodSeenLog(database: database)
        announceState = AnnounceStateLog(database: database)
        routeTable = RouteTableLog(database: database)
        if !requeuedAtOpen.isEmpty {
            logger.notice(
                "store \(path): \(requeuedAtOpen.count) messages were being sent when the node stopped; queued again"
            )
        }
    }

    /// Transactions the store committed since it was opened, and the writes they
    /// carried: writes per transaction is how much group commit shared each fsync.
    public var commitCounts: (transactions: Int, writes: Int) { database.committer.counts }

    /// The file's schema version: the number of migrations applied
    /// (``currentSchemaVersion`` once opened by this build).
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func schemaVersion() async throws(MeshError) -> Int {
        try await database.read("read the schema version") { db in
            try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        }
    }

    /// What one ``maintain(now:)`` pass did.
    public struct MaintenanceReport: Sendable, Hashable {
        /// Outbound messages marked expired.
        public var expired: [MessageID]
        /// Received message IDs forgotten (older than the dedup retention).
        public var dedupPruned: Int
        /// History entries deleted (beyond the history limit or older than the
        /// history retention).
        public var historyPruned: Int
    }

    /// The periodic upkeep, in one transaction: expires overdue outbound messages
    /// (``StoreOutbox/expire(now:)``), prunes the dedup log (``DedupLog/prune(now:)``),
    /// and deletes the finished history older than
    /// ``StoreConfiguration/historyRetention`` and the oldest beyond
    /// ``StoreConfiguration/historyLimit``. The node calls it every few minutes.
    /// - Parameter now: the current time; nil for the store's clock.
    /// - Throws: ``MeshError`` when the store cannot be written.
    @discardableResult
    public func maintain(now: Date? = nil) async throws(MeshError) -> MaintenanceReport {
        let now = now.map(Millis.from) ?? database.nowMillis
        let configuration = configuration
        let claims = database.claims
        let (report, removed) = try await database.write("maintain the store") { db in
            let (expired, removed) = try StoreOutbox.expire(db, now: now, sparing: claims.held)
            let dedupPruned =
                try DedupLog.prune(db, before: now - Millis.from(configuration.dedupRetention))
                + FloodSeenLog.prune(db, before: now - Millis.from(configuration.dedupRetention))
            let historyPruned =
                try MessageHistory.prune(db, before: now - Millis.from(configuration.historyRetention))
                + MessageHistory.prune(db, keeping: configuration.historyLimit)
            return (
                MaintenanceReport(expired: expired, dedupPruned: dedupPruned, historyPruned: historyPruned), removed
            )
        }
        database.payloadFiles.remove(removed)
        return report
    }

    /// Closes the file. Later calls on the store fail with a `.notRunning` ``MeshError``
    /// (the non-throwing outbox calls log it and return nothing).
    /// - Throws: ``MeshError`` when SQLite cannot close the file.
    public func close() throws(MeshError) {
        database.markClosed()
        do {
            try database.pool.close()
        } catch {
            throw storeError(error, path: path, doing: "close the store")
        }
    }
}
