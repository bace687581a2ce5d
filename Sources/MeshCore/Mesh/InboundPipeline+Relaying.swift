import DequeModule
import Logging
import Synchronization

extension InboundPipeline {
    /// Takes custody of a DATA frame for another node (docs/PROTOCOL.md §A.6): the
    /// message is reassembled here, queued in the outbound queue (durably, on a node)
    /// with its ID, origin, flags and TTL − 1, and only then acknowledged. A message
    /// the queue already knows is a duplicate: acknowledged, not queued again — unless
    /// it was relayed on from here and comes back from another neighbour, or is this
    /// node's own message, already sent, coming back (a loop): refused.
    func relay(_ frame: DataFrame, from session: LinkSession) async -> LinkSession.AcceptResult {
        guard frame.ttl > 1 else {
            return refuseRelay("ttlExhausted", frame, session, "its TTL is \(frame.ttl)")
        }
        guard frame.flags & DataFrame.sealedFlag != 0 else {
            // The destination accepts an unsealed message only from its origin's own
            // link, so relaying one could only end in a drop.
            return refuseRelay("unsealed", frame, session, "it is not sealed, so no relay may carry it")
        }
        if let known = await delivery.queue.record(frame.messageID) {
            let from = state.withLock { $0.relayedFrom[frame.messageID] }
            if known.status == .relayed, let from, from != session.remote {
                // It went on from here and came back another way: a routing loop.
                // Refused, so its holder keeps it until its route changes.
                return refuseRelay("loop", frame, session, "this node relayed it already (it came from \(from))")
            }
            if known.status == .sent, frame.origin == localPeerID {
                // This node's own message, handed to a next hop, came back round a
                // loop (stale routes, e.g. across a partition): acknowledging it as a
                // duplicate would drop the only copy, since this node no longer holds
                // its payload. Refused, like any loop, so its holder keeps it.
                return refuseRelay("loop", frame, session, "this node sent it and it came back")
            }
            stats.update { $0.duplicatesDropped += 1 }
            return .duplicate
        }
        let payload: [UInt8]
        switch gather(frame, from: session, checkingDedup: false) {
        case .answer(let result): return result
        case .complete(let bytes): payload = bytes
        }
        let message = OutboundMessage(
            id: frame.messageID, destination: frame.destination, payload: payload, flags: frame.flags, origin: frame.origin,
            ttl: frame.ttl - 1)
        do {
            try await delivery.queue.enqueue(message)
        } catch {
            state.withLock { _ = $0.handingOver.remove(frame.messageID) }
            if await delivery.queue.record(frame.messageID) != nil {
                // Another copy got there first.
                stats.update { $0.duplicatesDropped += 1 }
                return .duplicate
            }
            _ = refuseRelay("queueRefused", frame, session, "the outbound queue refused it: \(error)")
            return reopen(frame, payload, from: session.remote, result: .refused)
        }
        let capacity = configuration.dedupCapacity
        state.withLock { state in
            state.handingOver.remove(frame.messageID)
            state.relayedFrom[frame.messageID] = session.remote
            state.relayedOrder.append(frame.messageID)
            while state.relayedOrder.count > capacity, let oldest = state.relayedOrder.popFirst() {
                state.relayedFrom[oldest] = nil
            }
        }
        stats.update { $0.relayAccepted += 1 }
        delivery.scheduler.schedule(.message(frame.messageID, frame.destination))
        return .accepted
    }

    private func refuseRelay(_ reason: String, _ frame: DataFrame, _ session: LinkSession, _ detail: String) -> LinkSession.AcceptResult {
        stats.update {
            $0.framesRefused += 1
            $0.relayRefused[reason, default: 0] += 1
        }
        remoteLog.note("relay_refused.\(reason)", "not relaying message \(frame.messageID) from \(frame.origin) to \(frame.destination) (via \(session.remote)): \(detail)") {
            "refused \(LogLimiter.formatted($0)) more messages to relay in the last \(LogLimiter.formatted($1)): \(reason)"
        }
        return .refused
    }
}
