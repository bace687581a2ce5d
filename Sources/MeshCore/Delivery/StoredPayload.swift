/// A payload that is already kept durably (written and synced by whoever received it,
/// e.g. the node's store while a client uploaded it), handed to
/// ``Router/send(to:stored:options:)`` so that the router neither copies nor hashes
/// the bytes again.
///
/// Ownership passes to the router with the call: on success the payload belongs to
/// the ``OutboundQueue`` (which adopts it, see
/// ``OutboundQueue/enqueue(_:stored:)``); on failure the router calls ``discard()``.
/// MeshStore's `StagedOutboxPayload` (a file in the outbox's payload directory) is the
/// implementation a node uses.
public protocol StoredPayload: Sendable {
    /// The payload's size in bytes.
    var byteCount: Int { get }
    /// The content digest of the bytes, made with the router's ``ReceiptSigner``
    /// (``ReceiptSigner/makeDigester()``); empty when none was made.
    var contentDigest: [UInt8] { get }
    /// Reads the bytes back (for a queue that cannot adopt the payload, or a message
    /// that must be sealed first).
    /// - Throws: when they cannot be read.
    func bytes() async throws -> [UInt8]
    /// Removes the payload (it was not queued). Calling it twice is harmless.
    func discard()
}

/// A content digest computed piece by piece, as the bytes arrive; its result equals
/// ``ReceiptSigner/digest(_:)`` of all the pieces together.
public protocol ContentDigester: AnyObject {
    /// Feeds the next bytes.
    func update(_ bytes: UnsafeRawBufferPointer)
    /// The digest of everything fed. Call it once.
    func finish() -> [UInt8]
}

extension ReceiptSigner {
    /// No incremental digest: a ``StoredPayload`` without a digest is read back and
    /// hashed at once.
    public func makeDigester() -> (any ContentDigester)? { nil }
}

extension OutboundQueue {
    /// Reads the payload back and queues it as ``enqueue(_:)`` does, then discards the
    /// stored copy: what a queue that keeps its own copy of the bytes does.
    public func enqueue(_ message: OutboundMessage, stored: any StoredPayload) async throws {
        try await enqueueCopying(message, stored: stored)
    }

    /// The default of ``enqueue(_:stored:)``, for a queue that adopts only some stored
    /// payloads and copies the others: reads `stored`, queues it with ``enqueue(_:)``,
    /// then discards it.
    public func enqueueCopying(_ message: OutboundMessage, stored: any StoredPayload) async throws {
        var message = message
        message.payload = try await stored.bytes()
        try await enqueue(message)
        stored.discard()
    }
}
