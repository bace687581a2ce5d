import Foundation
import GRDB
import Logging
import MeshCore

/// The node's persisted outbox: MeshCore's ``OutboundQueue`` in the store file, with a
/// history entry and a trace for every message.
///
/// Same semantics as ``InMemoryOutboundQueue`` (the shared tests run both), plus:
/// - ``enqueue(_:)`` returns once the message is committed; it throws a
///   ``MeshError/Code/storeFull`` error naming the bound when the outbox holds
///   ``StoreConfiguration/outboxMaxMessagesPerPeer`` messages or
///   ``StoreConfiguration/outboxMaxBytesPerPeer`` bytes for that peer, or the totals
///   ``StoreConfiguration/outboxMaxMessages`` / ``StoreConfiguration/outboxMaxBytes``.
/// - Claims live in memory and cost no write: a message whose send was cut by a crash
///   is simply queued at the next open and sent again; the receiver's dedup drops the
///   copy.
/// - Every message has an expiry (``StoreConfiguration/defaultExpiry`` or its own);
///   ``expire(now:)`` marks the queued and sent messages whose expiry passed as
///   ``MessageStatus/expired``. Nothing is dropped silently: the history keeps them.
/// - A status update is recorded in the trace (transports, reasons), after the attempt
///   of the claim it ends (its number and time).
///
/// The ``OutboundQueue`` methods that cannot throw (claim, waiting, update, record) log a
/// storage failure and behave as if the message were unknown; the message stays in the
/// file for the next try.
public struct StoreOutbox: OutboundQueue {
    let database: StoreDatabase

    /// Stores a new message with status queued and the default expiry.
    /// - Throws: ``MeshError`` `.storeFull` naming the bound that is reached,
    ///   `.invalidArgument` when a message with this ID is still pending, `.storeFailed`
    ///   when the file cannot be written.
    public func enqueue(_ message: OutboundMessage) async throws(MeshError) {
        try await enqueue(message, expiresAfter: message.expiresAfter)
    }

    /// Stores a new message with status queued.
    /// - Parameters:
    ///   - message: the message.
    ///   - expiresAfter: how long it may wait for delivery; nil for the message's own
    ///     expiry, or else the store's default.
    /// - Throws: as ``enqueue(_:)``.
    public func enqueue(_ message: OutboundMessage, expiresAfter: Duration?) async throws(MeshError) {
        let configuration = database.configuration
        let now = database.nowMillis
        let expiresAt = now + Millis.from(expiresAfter ?? message.expiresAfter ?? configuration.defaultExpiry)
        // A large payload goes to its own file first (synced), so the transaction
        // stays small; the row names the file.
        let payloadFile =
            message.payload.count >= configuration.outboxFileThreshold
            ? try await database.payloadFiles.write(message.payload, for: message.id) : nil
        do {
            try await insert(
                message,
                bytes: message.payload.count,
                payloadFile: payloadFile,
                now: now,
                expiresAt: expiresAt
            )
        } catch {
            if let payloadFile { database.payloadFiles.remove([payloadFile]) }
            throw error
        }
    }

    /// Inserts the history entry and the outbox row of a message of `bytes` bytes (in
    /// `payloadFile` when it names one, else in the row). Returns the attempts the
    /// entry counts already (more than 0 for a finished message sent again).
    @discardableResult
    func insert(
        _ message: OutboundMessage,
        bytes: Int,
        payloadFile: String?,
        now: Int64,
        expiresAt: Int64
    ) async throws(MeshError) -> Int {
        let configuration = database.configuration
        return try await database.write("enqueue message \(message.id.hex)") { db in
            try Self.insert(
                db,
                message,
                bytes: bytes,
                payloadFile: payloadFile,
                now: now,
                expiresAt: expiresAt,
                configuration: configuration
            )
        }
    }

    /// Takes a queued message for sending: nobody else can claim it until it is
    /// updated. The claim is kept in memory (no write): its attempt goes to the history
    /// and the trace with the status update that ends it. A message whose expiry passed
    /// is marked expired instead. A payload kept in a file is read here, outside any
    /// write (a file that cannot be read releases the claim, with the reason in the
    /// trace).
    /// - Returns: nil when it is not queued, already claimed, expired, or the store failed.
    public func claim(_ id: MessageID) async -> OutboundMessage? {
        let now = database.nowMillis
        let files = database.payloadFiles
        let claims = database.claims
        let key = id.hex
        // Reserved before the row is read, and released only after the update that
        // ends a claim committed: a claim never reads a row older than that update.
        guard claims.reserve(key) else { return nil }
        do {
            // Not isolated: the reservation holds the rows still.
            let found = try await database.read("claim message \(key)", isolated: false) {
                db -> (ClaimedRow, attempt: Int)?? in
                guard let history = try HistoryRow.outbound(db, key), history.status == MessageStatus.queued.name,
                    let historyID = history.id,
                    let claimed = try db.cachedStatement(
                        sql:
                            "SELECT destination, payload, flags, origin, ttl, payloadFile, bytes FROM outbox WHERE historyID = ?"
                    ).firstRow(
                        [historyID],
                        { row -> ClaimedRow in
                            let payloadFile: String? = row[5]
                            let flags: Int = row[2]
                            let ttl: Int? = row[4]
                            let message = OutboundMessage(
                                id: id,
                                destination: try PeerID.stored(row[0]),
                                payload: payloadFile == nil ? Array(row[1] as Data) : [],
                                flags: UInt16(truncatingIfNeeded: flags),
                                contentDigest: history.contentDigest.map(Array.init) ?? [],
                                origin: try (row[3] as String?).map(PeerID.stored),
                                ttl: ttl.map { UInt8(clamping: $0) },
                                previousHop: try history.previousHop.map(PeerID.stored)
                            )
                            return ClaimedRow(message: message, payloadFile: payloadFile, bytes: row[6])
                        }
                    )
                else { return .some(nil) }
                if let expiresAt = history.expiresAt, expiresAt <= now { return nil }
                return .some((claimed, history.attempts + 1))
            }
            guard let found else {
                // Expired: marked so (a write), never sent.
                let removed = try await database.write("expire message \(key)") { db -> [String] in
                    guard var history = try HistoryRow.outbound(db, key), history.status == MessageStatus.queued.name,
                        let expiresAt = history.expiresAt, expiresAt <= now
                    else { return [] }
                    return try Self.markExpired(db, &history, now: now)
                }
                claims.release(key)
                files.remove(removed)
                return nil
            }
            guard let (claimed, attempt) = found else {
                claims.release(key)
                return nil
            }
            claims.confirm(key, OutboxClaims.Claim(attempt: attempt, at: now))
            var message = claimed.message
            if let file = claimed.payloadFile {
                // The claim keeps its file (only a sent or final status removes it).
                do {
                    message.payload = try files.read(file, bytes: claimed.bytes)
                } catch {
                    database.logger.error("\(error)")
                    await update(
                        id,
                        to: .queued,
                        transport: nil,
                        reason: "its payload file could not be read: \(error.message)"
                    )
                    return nil
                }
            }
            return message
        } catch {
            claims.release(key)
            database.logger.error("\(error)")
            return nil
        }
    }

    /// The outbox rows still this node's to send to one destination (argument 1, hex)
    /// and unexpired at a time (argument 2, ms): queued, claimed or not.
    private static let unsentTo = """
        FROM outbox JOIN history ON history.id = outbox.historyID
        WHERE outbox.destination = ? AND history.status = 'queued'
        AND (history.expiresAt IS NULL OR history.expiresAt > ?)
        """

    /// The queued, unclaimed, unexpired messages for `destination`: emergencies first,
    /// then oldest first.
    public func waiting(for destination: PeerID) async -> [MessageID] {
        let now = database.nowMillis
        let claimed = database.claims.held
        do {
            return try await database.read("list the messages waiting for \(destination.hex)") { db in
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT outbox.messageID \(Self.unsentTo)
                        ORDER BY (outbox.flags & \(DataFrame.emergencyFlag)) DESC, outbox.number
                        """,
                    arguments: [destination.hex, now]
                )
            }
            .filter { !claimed.contains($0) }
            .map(MessageID.stored)
        } catch {
            database.logger.error("\(error)")
            return []
        }
    }

    /// Whether a queued (claimed or not), unexpired message for `destination` is in the
    /// outbox.
    public func holdsUnsent(for destination: PeerID) async -> Bool {
        let now = database.nowMillis
        do {
            return try await database.read("look for messages to \(destination.hex)") { db in
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT EXISTS (SELECT 1 \(Self.unsentTo))
                        """,
                    arguments: [destination.hex, now]
                ) ?? false
            }
        } catch {
            database.logger.error("\(error)")
            return true  // asking on costs a request; not asking could leave a message waiting
        }
    }

    /// Records that a message moved on and releases its claim (once this is committed).
    /// Sent or final: its payload leaves the outbox (the history keeps the entry). A
    /// message already delivered, failed or expired does not change any more. The
    /// claim's attempt (its number and time), then the status, transport and reason go
    /// to the history entry and the trace.
    public func update(_ id: MessageID, to status: MessageStatus, transport: String?, reason: String?) async {
        let now = database.nowMillis
        let claims = database.claims
        let claim = claims.claim(id.hex)
        defer { if claim != nil { claims.release(id.hex) } }
        do {
            let removed = try await database.write("record status \(status) of message \(id.hex)") { db -> [String] in
                guard let (historyID, old, _) = try HistoryRow.outboundStatus(db, id.hex), !MessageStatus(old).isFinal
                else { return [] }
                if let claim {
                    try MessageHistory.record(
                        db,
                        historyID: historyID,
                        at: claim.at,
                        kind: .attempt,
                        status: .queued,
                        attempt: claim.attempt
                    )
                }
                try HistoryRow.updateStatus(
                    db,
                    id: historyID,
                    to: status,
                    transport: transport,
                    reason: reason,
                    attempts: claim?.attempt ?? 0,
                    now: now
                )
                var removed: [String] = []
                if status.isFinal || status == .sent {
                    removed = try Self.deleteRow(db, historyID: historyID)
                }
                try MessageHistory.record(
                    db,
                    historyID: historyID,
                    at: now,
                    kind: .status,
                    status: status,
                    transport: transport,
                    reason: reason
                )
                return removed
            }
            database.payloadFiles.remove(removed)
        } catch {
            database.logger.error("\(error)")
        }
    }

    /// The record of a message, while the history remembers it.
    public func record(_ id: MessageID) async -> OutboundRecord? {
        do {
            return try await database.read("read the record of message \(id.hex)", isolated: false) {
                db -> OutboundRecord? in
                guard let row = try HistoryRow.outbound(db, id.hex) else { return nil }
                return OutboundRecord(
                    id: id,
                    destination: try PeerID.stored(row.peer),
                    bytes: row.bytes,
                    status: MessageStatus(row.status),
                    transport: row.transport,
                    reason: row.reason,
                    flags: UInt16(truncatingIfNeeded: row.flags),
                    contentDigest: row.contentDigest.map(Array.init) ?? [],
                    attempts: row.attempts,
                    origin: try row.origin.map(PeerID.stored),
                    previousHop: try row.previousHop.map(PeerID.stored),
                    ttl: row.ttl.map { UInt8(clamping: $0) }
                )
            }
        } catch {
            database.logger.error("\(error)")
            return nil
        }
    }

    /// Replaces the bytes and flags of a message still in the outbox (queued or
    /// claimed), and its TTL when `ttl` is not nil, in one transaction with its
    /// history entry; a `payload` trace event records it. The digest, ID and status stay.
    /// - Throws: ``MeshError`` `.unknownMessage` when it left the outbox, `.storeFailed`
    ///   when the file cannot be written.
    public func replacePayload(
        _ id: MessageID,
        with payload: [UInt8],
        flags: UInt16,
        ttl: UInt8?
    ) async throws(MeshError) {
        let now = database.nowMillis
        let files = database.payloadFiles
        let newFile =
            payload.count >= database.configuration.outboxFileThreshold ? try await files.write(payload, for: id) : nil
        let oldFile: String?
        do {
            oldFile = try await replace(id, with: payload, file: newFile, flags: flags, ttl: ttl, now: now)
        } catch {
            if let newFile { files.remove([newFile]) }
            throw error
        }
        if let oldFile { files.remove([oldFile]) }
    }

    /// The transaction of ``replacePayload(_:with:flags:ttl:)``; returns the file the
    /// old payload was in.
    private func replace(
        _ id: MessageID,
        with payload: [UInt8],
        file: String?,
        flags: UInt16,
        ttl: UInt8?,
        now: Int64
    ) async throws(MeshError) -> String? {
        try await database.write("replace the payload of message \(id.hex)") { db -> String? in
            guard
                let row = try OutboxRow.fetchOne(
                    db,
                    sql: "SELECT * FROM outbox WHERE messageID = ?",
                    arguments: [id.hex]
                )
            else {
                throw MeshError(
                    .unknownMessage,
                    "message \(id.hex) is not in the outbox any more; its payload was not replaced"
                )
            }
            // A nil `ttl` keeps the stored one. A relayed message's history keeps the TTL
            // it goes on with (the relay loop rule across restarts); this node's own keeps
            // none (NULL stays NULL).
            let newTTL = ttl.map(Int.init)
            try db.execute(
                sql:
                    "UPDATE outbox SET payload = ?, payloadFile = ?, flags = ?, bytes = ?, ttl = COALESCE(?, ttl) WHERE number = ?",
                arguments: [file == nil ? Data(payload) : Data(), file, Int(flags), payload.count, newTTL, row.number]
            )
            // The history keeps the payload's size (the one the user sent); the
            // envelope's is in the trace.
            try db.execute(
                sql:
                    "UPDATE history SET flags = ?, ttl = CASE WHEN ttl IS NULL THEN NULL ELSE COALESCE(?, ttl) END WHERE id = ?",
                arguments: [Int(flags), newTTL, row.historyID]
            )
            try MessageHistory.record(
                db,
                historyID: row.historyID,
                at: now,
                kind: .status,
                status: .queued,
                reason: "sealed end to end to go through a relay (envelope \(payload.count) bytes)"
            )
            return row.payloadFile
        }
    }

}
