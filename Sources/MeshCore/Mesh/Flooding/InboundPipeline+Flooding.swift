import Logging
import Synchronization

extension InboundPipeline {
    /// Takes custody of a flooded DATA frame for another node (docs/PROTOCOL.md §A.9):
    /// a copy already seen (the flood duplicate cache, or the outbound queue) is
    /// acknowledged as a duplicate and counts as an offer for suppression; a new one is
    /// queued with TTL − 1, remembered in the duplicate cache, acknowledged, and
    /// re-broadcast after the random delay (an emergency at once).
    func relayFlood(_ frame: DataFrame, from session: LinkSession) async -> LinkSession.AcceptResult {
        let flood = delivery.flood
        let id = frame.messageID
        guard frame.flags & DataFrame.sealedFlag != 0 else {
            return refuseFlood("unsealed", frame, session, "it is not sealed, so no relay may carry it")
        }
        flood.noteOffered(id, by: session.remote)
        if await flood.seen.contains(id) {
            return floodDuplicate()
        }
        if await delivery.queue.record(id) != nil, !state.withLock({ $0.handingOver.contains(frame.handOverKey) }) {
            return floodDuplicate()
        }
        guard frame.ttl > 1 else {
            // The flood's wave ends here: acknowledged (its sender need not retry), not
            // carried further.
            stats.update { $0.flood.ttlExhausted += 1 }
            return .duplicate
        }
        let isReceipt = frame.flags & DataFrame.receiptFlag != 0
        let isEmergency = frame.flags & DataFrame.emergencyFlag != 0
        let budgeted = !isReceipt && !isEmergency
        if budgeted, let refusal = delivery.relayBudget.reserve(from: session.remote) {
            return refuseFlood(refusal.reason, frame, session, refusal.detail)
        }
        // Reserved now, given back unless the flood is taken into custody below.
        var spent = false
        defer { if budgeted, !spent { delivery.relayBudget.release(from: session.remote) } }
        let payload: [UInt8]
        switch gather(frame, from: session, checkingDedup: false) {
        case .answer(let result): return result
        case .complete(let bytes): payload = bytes
        }
        if isEmergency, !verifyRelayed(frame, payload, session: session) {
            // Not the origin's emergency: acknowledged and dropped, no budget spent.
            state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
            return .accepted
        }
        if isEmergency, let reason = flood.admitEmergency(origin: frame.origin, neighbour: session.remote) {
            state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
            stats.update { $0.flood.emergencyRateLimited[reason, default: 0] += 1 }
            _ = refuseFlood(
                reason,
                frame,
                session,
                "over the emergency rate limit (flood.emergency_per_hour / emergency_per_neighbour_per_hour)"
            )
            return reopen(frame, payload, from: session.remote, result: .refused)
        }
        let message = OutboundMessage(
            id: id,
            destination: frame.destination,
            payload: payload,
            flags: frame.flags & ~DataFrame.localFlags,
            origin: frame.origin,
            ttl: frame.ttl - 1,
            previousHop: session.remote
        )
        do {
            try await delivery.queue.enqueue(message)
        } catch {
            state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
            if await delivery.queue.record(id) != nil { return floodDuplicate() }
            _ = refuseFlood("queueRefused", frame, session, "the outbound queue refused it: \(error)")
            return reopen(frame, payload, from: session.remote, result: .refused)
        }
        state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
        do {
            try await flood.seen.insert(id)
        } catch {
            // The queue holds it, and the queue answers duplicates too.
            logger.debug("flood \(id.hex) is queued but not in the duplicate cache: \(error)")
        }
        spent = true
        stats.update {
            $0.relayAccepted += 1
            $0.flood.accepted += 1
        }
        if isEmergency {
            delivery.scheduler.schedule(.now(id, frame.destination))
        } else {
            delivery.scheduler.schedule(.later(id, frame.destination, at: clock.now + flood.delay()))
        }
        return .accepted
    }

    private func floodDuplicate() -> LinkSession.AcceptResult {
        stats.update {
            $0.duplicatesDropped += 1
            $0.flood.duplicates += 1
        }
        return .duplicate
    }

    private func refuseFlood(
        _ reason: String,
        _ frame: DataFrame,
        _ session: LinkSession,
        _ detail: String
    ) -> LinkSession.AcceptResult {
        stats.update {
            $0.framesRefused += 1
            $0.relayRefused[reason, default: 0] += 1
        }
        remoteLog.note(
            "flood_refused.\(reason)",
            "not relaying flooded message \(frame.messageID) from \(frame.origin) to \(frame.destination) (via \(session.remote)): \(detail)"
        ) {
            "refused \(LogLimiter.formatted($0)) more flooded messages in the last \(LogLimiter.formatted($1)): \(reason)"
        }
        return .refused
    }
}
