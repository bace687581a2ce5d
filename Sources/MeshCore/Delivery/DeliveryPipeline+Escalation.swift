extension DeliveryPipeline {
    /// Sends one chunk to `peer`: on the best live link first (by the routing policy),
    /// on the next after an error or ack timeout, up to the policy's attempt limit.
    /// - Returns: the transport whose link acknowledged it.
    /// - Throws: `.deliveryFailed` (every attempt failed), `.noRoute` (no live link),
    ///   or `CancellationError`.
    func deliver(_ frame: DataFrame, to peer: PeerID) async throws -> String {
        var tried: Set<LinkID> = []
        var lastError: MeshError?
        for _ in 0..<policy.maxAttempts {
            try Task.checkCancellation()
            var live = table.sessions(to: peer)
            if lastError != nil, !live.contains(where: { !tried.contains($0.id) }) {
                // Every live link failed this frame (a link dropped, or a duplicate
                // link was closed): give a replacement link a moment to come up. The
                // wait ends the moment one registers.
                let grace = min(configuration.reconnect.maxDelay, .seconds(2)) + configuration.reconnect.initialDelay
                await table.waitForLink(to: peer, excluding: tried, until: clock.now + grace, clock: clock)
                try Task.checkCancellation()
                live = table.sessions(to: peer)
            }
            guard !live.isEmpty else { break }
            let ranked = policy.rank(live.map(\.candidate), payloadSize: frame.payload.count)
            guard let choice = ranked.first(where: { !tried.contains($0.linkID) }) ?? ranked.first,
                let session = live.first(where: { $0.id == choice.linkID })
            else { break }
            let timeout = policy.ackTimeout(for: choice, bytes: frame.payload.count + Frame.dataHeaderSize)
            do {
                try await session.sendData(frame, timeout: timeout)
                session.data.countSent(frame.payload.count)
                if !session.isClosed { paths.noteSuccess(to: peer, over: session) }
                return session.transport
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                let meshError = (error as? MeshError) ?? MeshError(.linkClosed, "\(error)")
                lastError = meshError
                tried.insert(choice.linkID)
                session.recordFailure()
                stats.update { stats in
                    stats.retries += 1
                    if meshError.code == .ackTimeout { stats.ackTimeouts += 1 }
                    stats.transports[session.transport, default: .init()].failures += 1
                }
                paths.noteFailure(to: peer, "\(session.transport): \(meshError.message)")
            }
        }
        if let lastError {
            throw MeshError(
                .deliveryFailed,
                "no link to \(peer) acknowledged message \(frame.messageID) (last: \(lastError.message))",
                cause: lastError
            )
        }
        throw MeshError(.noRoute, "no live link to peer \(peer); the message was not sent")
    }
}
