import MeshCore
import MeshStore
import NIOCore

extension ControlHandler {
    /// Raw payloads of at least this many bytes are streamed into the outbox's payload
    /// directory as they arrive (``receivePayload(_:declaredBytes:)``); smaller ones are
    /// collected and stored in the outbox row (the store's `outboxFileThreshold`).
    package var uploadThreshold: Int { store.configuration.outboxFileThreshold }

    /// The largest payload a send takes (`max_message_size`).
    package var maximumPayloadSize: Int { configuration.routerConfiguration.maxMessageSize }

    /// The refusal of a payload over `max_message_size`: its size, the limit, and that
    /// nothing was queued.
    package static func payloadTooLarge(_ bytes: Int, limit: Int) -> MeshError {
        MeshError(
            .messageTooLarge,
            "the payload of \(bytes) bytes is larger than max_message_size (\(limit) bytes): nothing was queued; raise max_message_size to send more"
        )
    }

    /// Receives a raw payload of `declaredBytes` bytes from `body` straight into a new
    /// file in the outbox's payload directory, and syncs it while a second thread hashes
    /// it: the result is durable and goes to ``send(_:stored:)`` without being copied or
    /// hashed again.
    ///
    /// Nothing half-written is ever queued: when the body ends early (the client went
    /// away), carries more than declared, or the disk fails, the file is removed and
    /// this throws.
    /// - Throws: `.invalidArgument` naming how many bytes arrived of how many declared;
    ///   `.messageTooLarge` above `max_message_size`; `.storeFailed` from the disk.
    package func receivePayload<Body: AsyncSequence>(_ body: Body, declaredBytes: Int) async throws -> any StoredPayload
    where Body.Element == ByteBuffer {
        guard declaredBytes <= maximumPayloadSize else {
            throw Self.payloadTooLarge(declaredBytes, limit: maximumPayloadSize)
        }
        let writer = try store.outbox.stagePayload()
        do {
            for try await chunk in body {
                guard writer.byteCount + chunk.readableBytes <= declaredBytes else {
                    throw MeshError(
                        .invalidArgument,
                        "the body carries more than the \(declaredBytes) bytes it declared; nothing was queued"
                    )
                }
                try chunk.withUnsafeReadableBytes { bytes throws(MeshError) in try writer.append(bytes) }
            }
            guard writer.byteCount == declaredBytes else {
                throw MeshError(
                    .invalidArgument,
                    "the body ended after \(writer.byteCount) of its \(declaredBytes) declared bytes (the client stopped sending); nothing was queued"
                )
            }
            return try await writer.finish(digestingWith: router.makeContentDigester())
        } catch {
            writer.abandon()
            throw error
        }
    }
}
