import Logging

// Sealing for relays and sending a large message in chunks.
extension DeliveryPipeline {
    /// Seals an unsealed message of this node's once, so a relay may carry it (relays
    /// refuse unsealed messages, and the destination would drop one), and keeps the
    /// sealed form in the queue so a retry sends the same bytes.
    func sealForRelay(_ message: OutboundMessage) async throws -> OutboundMessage {
        let peer = message.destination
        guard !message.isRelayed, let sealer else {
            throw MeshError(
                .noRoute,
                "message \(message.id.hex) to \(peer) is not sealed and this node has no sealer, so only a direct link to \(peer) may carry it (relays refuse unsealed messages); it waits for one"
            )
        }
        let sealed = try seal(
            message.payload,
            with: sealer,
            to: peer,
            binding: SealBinding(messageID: message.id, flags: message.flags)
        )
        guard sealed.count <= configuration.maxMessageSize else {
            throw MeshError(
                .messageTooLarge,
                "message \(message.id.hex) sealed for a relay is \(sealed.count) bytes, over max message size \(configuration.maxMessageSize); it waits for a direct link to \(peer)"
            )
        }
        let flags = message.flags | DataFrame.sealedFlag
        try await queue.replacePayload(message.id, with: sealed, flags: flags)
        var copy = message
        copy.payload = sealed
        copy.flags = flags
        return copy
    }

    /// Sends every chunk of `message` to the neighbour `hop`, in parallel.
    /// - Returns: the transport of the last link that acknowledged a chunk.
    func transmitChunks(of message: OutboundMessage, via hop: PeerID) async throws -> String {
        let count = DataFrame.chunkCount(messageLength: message.payload.count)
        let origin = message.origin ?? localPeerID
        let ttl = message.ttl ?? configuration.defaultTTL
        func chunk(_ index: Int) -> DataFrame {
            let start = index * Frame.chunkSize
            let end = min(message.payload.count, start + Frame.chunkSize)
            return DataFrame(
                sequence: 0,
                messageID: message.id,
                origin: origin,
                destination: message.destination,
                ttl: ttl,
                chunkIndex: UInt16(index),
                chunkCount: UInt16(count),
                messageLength: UInt32(message.payload.count),
                flags: message.flags & ~DataFrame.localFlags,
                payload: count == 1 ? message.payload : Array(message.payload[start..<end])
            )
        }
        if count == 1 { return try await deliver(chunk(0), to: hop) }
        return try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<count {
                let frame = chunk(index)
                group.addTask { try await self.deliver(frame, to: hop) }
            }
            var last = ""
            for try await used in group { last = used }
            return last
        }
    }
}
