import MeshCore

extension StoreOutbox {
    /// A writer for a large payload that arrives piece by piece (an upload): its bytes
    /// go straight into a new file in the payload directory, and
    /// ``enqueue(_:stored:)`` adopts that file as the message's payload.
    /// - Throws: `.storeFailed` when the file cannot be created.
    public func stagePayload() throws(MeshError) -> OutboxPayloadWriter {
        let files = database.payloadFiles
        try files.prepare()
        return try OutboxPayloadWriter(files: files)
    }

    /// Stores a new message with status queued whose payload is `stored`. A
    /// ``StagedOutboxPayload`` of this store's payload directory becomes the row's
    /// payload file as it is (no copy); any other payload is read and stored as
    /// ``enqueue(_:)`` does. The file is removed when the message is not queued.
    /// - Throws: as ``enqueue(_:)``.
    public func enqueue(_ message: OutboundMessage, stored: any StoredPayload) async throws {
        guard let staged = stored as? StagedOutboxPayload, staged.directory == database.payloadFiles.directory else {
            return try await enqueueCopying(message, stored: stored)
        }
        let now = database.nowMillis
        let expiresAt = now + Millis.from(message.expiresAfter ?? database.configuration.defaultExpiry)
        do {
            try await insert(message, bytes: staged.byteCount, payloadFile: staged.name, now: now, expiresAt: expiresAt)
        } catch {
            staged.discard()
            throw error
        }
    }

    /// Throws `.storeFull`, naming the bound, when a message of `bytes` bytes to
    /// `destination` would not fit in the outbox now; `.storeFailed` when the file
    /// cannot be read. A send that passes may still be refused when it is queued (the
    /// outbox filled meanwhile, or sealing made it larger).
    public func checkRoom(for destination: PeerID, bytes: Int) async throws {
        let configuration = database.configuration
        try await database.read("check the outbox has room for \(bytes) bytes to \(destination.hex)") { db in
            try Self.checkBounds(db, to: destination, id: nil, bytes: bytes, configuration: configuration)
        }
    }
}
