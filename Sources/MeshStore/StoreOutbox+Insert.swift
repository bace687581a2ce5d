import Foundation
import GRDB
import Logging
import MeshCore

/// Inserting a message or a receipt in a caller's transaction, within the outbox's bounds.
extension StoreOutbox {
    /// Stores a new message like ``enqueue(_:)`` and claims it in the same step: the
    /// claim is reserved before the row is written, so no drain takes it meanwhile,
    /// and the message comes back as the caller gave it, not read back. A payload
    /// for a file takes the ordinary steps.
    /// - Returns: the claimed message; nil when it was queued but not claimed.
    /// - Throws: as ``enqueue(_:)``.
    public func enqueueClaimed(_ message: OutboundMessage) async throws(MeshError) -> OutboundMessage? {
        let configuration = database.configuration
        let claims = database.claims
        let key = message.id.hex
        let now = database.nowMillis
        let expiresAt = now + Millis.from(message.expiresAfter ?? configuration.defaultExpiry)
        // Reserved last: the other cases take the ordinary steps without a claim.
        guard message.payload.count < configuration.outboxFileThreshold, expiresAt > now, claims.reserve(key) else {
            try await enqueue(message)
            return await claim(message.id)
        }
        let attempts: Int
        do {
            attempts = try await insert(
                message,
                bytes: message.payload.count,
                payloadFile: nil,
                now: now,
                expiresAt: expiresAt
            )
        } catch {
            claims.release(key)
            throw error
        }
        claims.confirm(key, OutboxClaims.Claim(attempt: attempts + 1, at: now))
        return OutboundMessage(
            id: message.id,
            destination: message.destination,
            payload: message.payload,
            flags: message.flags,
            contentDigest: message.contentDigest,
            origin: message.origin,
            ttl: message.ttl,
            previousHop: message.previousHop
        )
    }

    /// Queues a delivery receipt in the caller's transaction (the inbox's, which stores
    /// the message it answers), unless the outbox holds it unfinished already: what
    /// ``OutboundQueue/enqueueReceipt(_:)`` does in two steps.
    static func insertReceipt(
        _ db: Database,
        _ receipt: OutboundMessage,
        now: Int64,
        configuration: StoreConfiguration
    ) throws {
        if let old = try HistoryRow.outboundStatus(db, receipt.id.hex), !MessageStatus(old.status).isFinal { return }
        let expiresAt = now + Millis.from(receipt.expiresAfter ?? configuration.defaultExpiry)
        try insert(
            db,
            receipt,
            bytes: receipt.payload.count,
            payloadFile: nil,
            now: now,
            expiresAt: expiresAt,
            configuration: configuration
        )
    }

    /// The rows of ``insert(_:bytes:payloadFile:now:expiresAt:)``, in the caller's
    /// transaction. Returns the attempts the entry counts already (more than 0 for a
    /// finished message sent again under its ID).
    @discardableResult
    static func insert(
        _ db: Database,
        _ message: OutboundMessage,
        bytes: Int,
        payloadFile: String?,
        now: Int64,
        expiresAt: Int64,
        configuration: StoreConfiguration
    ) throws -> Int {
        try Self.checkBounds(db, to: message.destination, id: message.id, bytes: bytes, configuration: configuration)
        var history = HistoryRow(
            messageID: message.id.hex,
            direction: MessageDirection.outbound.name,
            peer: message.destination.hex,
            // The size the user sent, not the envelope's when this node sealed it.
            bytes: message.payloadBytes ?? bytes,
            status: MessageStatus.queued.name,
            createdAt: now,
            expiresAt: expiresAt,
            attempts: 0,
            flags: Int(message.flags),
            contentDigest: message.contentDigest.isEmpty ? nil : Data(message.contentDigest),
            origin: message.origin?.hex,
            previousHop: message.previousHop?.hex,
            ttl: message.previousHop == nil ? nil : message.ttl.map(Int.init)
        )
        // Only this node's own messages keep their text: a relayed one is sealed to
        // someone else, a receipt is not the user's. A payload sealed already is no
        // text: the sender records the plaintext (MessageHistory.keepText).
        if message.origin == nil, message.previousHop == nil, message.flags & 3 == 0 {
            history.keep(payload: message.payload, bytes: bytes)
        }
        if let old = try HistoryRow.outboundStatus(db, message.id.hex) {
            // A finished message sent again under the same ID, or this node's own
            // sent message taken back after it came round a loop (it comes with the
            // neighbour it came back from; its outbox row went when it was sent):
            // the entry starts over, its trace goes on.
            let status = MessageStatus(old.status)
            guard status.isFinal || (status == .sent && message.previousHop != nil) else {
                throw MeshError(
                    .invalidArgument,
                    "message \(message.id.hex) is already in the outbox (status \(old.status)); use a new message ID"
                )
            }
            history.id = old.id
            history.attempts = old.attempts
            try history.update(db)
        } else {
            try history.insertRow(db)
        }
        guard let historyID = history.id else { return history.attempts }
        var row = OutboxRow(
            historyID: historyID,
            messageID: message.id.hex,
            destination: message.destination.hex,
            flags: Int(message.flags),
            bytes: bytes,
            claimed: false,
            payload: payloadFile == nil ? Data(message.payload) : Data(),
            origin: message.origin?.hex,
            ttl: message.ttl.map(Int.init),
            payloadFile: payloadFile
        )
        try row.insertRow(db)
        try MessageHistory.record(
            db,
            historyID: historyID,
            at: now,
            kind: .enqueued,
            status: .queued,
            reason: message.payloadBytes == nil ? nil : "sealed end to end (envelope \(bytes) bytes)"
        )
        return history.attempts
    }

    /// Throws `.storeFull` naming the bound when a message of `size` bytes to
    /// `destination` would not fit in the outbox now (`id`: the message, for the error;
    /// nil for a check before it exists).
    static func checkBounds(
        _ db: Database,
        to destination: PeerID,
        id: MessageID?,
        bytes size: Int,
        configuration: StoreConfiguration
    ) throws {
        // Cached statements: every enqueue runs both. The triggers of `outboxShare`
        // keep its rows, one per destination, so neither reads the outbox itself.
        let peer = try db.cachedStatement(sql: "SELECT messages, bytes FROM outboxShare WHERE destination = ?")
            .firstRow([destination.hex]) { row -> (Int, Int) in (row[0], row[1]) }
        let total = try db.cachedStatement(
            sql: "SELECT COALESCE(SUM(messages), 0), COALESCE(SUM(bytes), 0) FROM outboxShare"
        ).firstRow { row -> (Int, Int) in (row[0], row[1]) }
        let (peerMessages, peerBytes) = peer ?? (0, 0)
        let (totalMessages, totalBytes) = total ?? (0, 0)
        let advice = "wait until messages are delivered or expire, or raise the limit"
        let what =
            id.map { "message \($0.hex) to \(destination) not queued" }
            ?? "a message of \(size) bytes to \(destination) would not be queued"
        func full(_ text: String) -> MeshError {
            MeshError(.storeFull, "outbox full: \(what): \(text); \(advice)")
        }
        if peerMessages + 1 > configuration.outboxMaxMessagesPerPeer {
            throw full(
                "\(peerMessages) messages wait for peer \(destination), the limit is outboxMaxMessagesPerPeer = \(configuration.outboxMaxMessagesPerPeer)"
            )
        }
        if peerBytes + size > configuration.outboxMaxBytesPerPeer {
            throw full(
                "\(peerBytes) bytes wait for peer \(destination) and this message has \(size), the limit is outboxMaxBytesPerPeer = \(configuration.outboxMaxBytesPerPeer)"
            )
        }
        if totalMessages + 1 > configuration.outboxMaxMessages {
            throw full(
                "\(totalMessages) messages wait in all, the limit is outboxMaxMessages = \(configuration.outboxMaxMessages)"
            )
        }
        if totalBytes + size > configuration.outboxMaxBytes {
            throw full(
                "\(totalBytes) bytes wait in all and this message has \(size), the limit is outboxMaxBytes = \(configuration.outboxMaxBytes)"
            )
        }
    }

    /// What a claim took from the outbox: the message, and the file its payload is in
    /// (read after the commit) when it has one.
    struct ClaimedRow: Sendable {
        var message: OutboundMessage
        var payloadFile: String?
        var bytes: Int
    }
}
