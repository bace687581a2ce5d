import Foundation
import GRDB
import Logging
import MeshCore
import Synchronization

/// What every part of a store shares: the connection pool, the file's path for error
/// messages, the injected clock, the bounds and the logger.
struct StoreDatabase: Sendable {
    let pool: DatabasePool
    let path: String
    let configuration: StoreConfiguration
    let clock: @Sendable () -> Date
    let logger: Logger
    /// Set by ``MeshStore/close()``; checked before every access so that a closed store
    /// says so (SQLite's own error for a closed handle reads "out of memory").
    let closed: ClosedFlag
    /// Crash points for tests; inert unless a test chooses one.
    let faults: StoreFaults
    /// The one writer: concurrent writes share a transaction and its fsync.
    let committer: GroupCommit
    /// The outbox's claims, in memory only.
    let claims: OutboxClaims

    final class ClosedFlag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// Makes every later access fail with `.notRunning`.
    func markClosed() {
        closed.value.store(true, ordering: .releasing)
    }

    private func checkOpen(_ operation: String) throws(MeshError) {
        if closed.value.load(ordering: .acquiring) {
            throw MeshError(.notRunning, "store \(path): could not \(operation): the store is closed")
        }
    }

    /// Where the outbox and the inbox keep payloads of
    /// ``StoreConfiguration/outboxFileThreshold`` (``StoreConfiguration/inboxFileThreshold``)
    /// bytes or more.
    var payloadFiles: OutboxPayloadFiles { OutboxPayloadFiles(storePath: path) }

    /// The current time in the store's unit (milliseconds since 1970).
    var nowMillis: Int64 { Millis.from(clock()) }

    /// Runs `updates` atomically and durably: in a savepoint of the next group commit
    /// (``GroupCommit``), which it shares with every write submitted meanwhile; durable
    /// (`synchronous = FULL`) when this returns. Once submitted it runs to completion
    /// even if the calling task is cancelled, so that a status update is never
    /// half-recorded and never lost to a cancellation.
    /// - Throws: ``MeshError`` naming the store and `operation` (or the one `updates` threw).
    func write<T: Sendable>(
        _ operation: String,
        _ updates: @escaping @Sendable (Database) throws -> T
    ) async throws(MeshError) -> T {
        try checkOpen(operation)
        do {
            return try await withCheckedThrowingContinuation { continuation in
                committer.submit(
                    GroupCommit.Job(
                        perform: { db in
                            let value = try updates(db)
                            return { continuation.resume(returning: value) }
                        },
                        fail: { continuation.resume(throwing: $0) }
                    )
                )
            }
        } catch {
            throw storeError(error, path: path, doing: operation)
        }
    }

    /// Runs `value` on a reader connection, concurrent with writes: in a transaction
    /// (one consistent snapshot) unless `isolated` is false, for a read of one statement
    /// or of rows nobody else changes meanwhile (a claim's own), which then costs no
    /// BEGIN and COMMIT.
    /// - Throws: ``MeshError`` naming the store and `operation`.
    func read<T: Sendable>(
        _ operation: String,
        isolated: Bool = true,
        _ value: @escaping @Sendable (Database) throws -> T
    ) async throws(MeshError) -> T {
        try checkOpen(operation)
        do {
            // On the calling thread: a read never waits for the writer (WAL), and the
            // hop to a reader queue and back cost more than the read itself.
            return try readHere(isolated: isolated, value)
        } catch {
            throw storeError(error, path: path, doing: operation)
        }
    }

    /// GRDB's synchronous reads, which run `value` on this thread.
    private func readHere<T>(isolated: Bool, _ value: (Database) throws -> T) throws -> T {
        isolated ? try pool.read(value) : try pool.unsafeRead(value)
    }
}

/// Times in the store: integer milliseconds since 1970, UTC.
enum Millis {
    static func from(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    static func date(_ millis: Int64) -> Date {
        Date(timeIntervalSince1970: Double(millis) / 1000)
    }

    static func date(_ millis: Int64?) -> Date? {
        millis.map { date($0) }
    }

    /// "2d 3h 4m 5s"-style text for a span of milliseconds.
    static func describe(_ millis: Int64) -> String {
        var seconds = max(0, millis) / 1000
        var parts: [String] = []
        for (unit, size) in [("d", Int64(86_400)), ("h", 3_600), ("m", 60)] where seconds >= size {
            parts.append("\(seconds / size)\(unit)")
            seconds %= size
        }
        if seconds > 0 || parts.isEmpty { parts.append("\(seconds)s") }
        return parts.joined(separator: " ")
    }

    static func from(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min / 2 : .max / 2 }
        return product + attoseconds / 1_000_000_000_000_000
    }
}

extension PeerID {
    /// Parses a peer ID read back from the store.
    static func stored(_ hex: String) throws -> PeerID {
        guard let peer = PeerID(hex: hex) else {
            throw MeshError(.storeCorrupt, "the store holds a malformed peer ID \"\(hex)\"")
        }
        return peer
    }
}

extension MessageID {
    /// Parses a message ID read back from the store.
    static func stored(_ hex: String) throws -> MessageID {
        guard let id = MessageID(hex: hex) else {
            throw MeshError(.storeCorrupt, "the store holds a malformed message ID \"\(hex)\"")
        }
        return id
    }
}
