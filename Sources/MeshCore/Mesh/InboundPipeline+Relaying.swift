import DequeModule
import Logging
import Synchronization

extension InboundPipeline {
    /// Takes custody of a DATA frame for another node (docs/PROTOCOL.md §A.6): the
    /// message is reassembled here, queued in the outbound queue (durably, on a node)
    /// with its ID, origin, flags and TTL − 1, and only then acknowledged. A message
    /// the queue already knows is a duplicate: acknowledged, not queued again — unless
    /// it came round a loop (from another neighbour, or from the same one with a lower
    /// TTL; or it is this node's own message or receipt): then it is refused while this
    /// node still holds it or would send it straight back, and taken back into custody
    /// when this node handed it on and its route has moved since.
    func relay(_ frame: DataFrame, from session: LinkSession) async -> LinkSession.AcceptResult {
        if frame.flags & DataFrame.floodFlag != 0 { return await relayFlood(frame, from: session) }
        guard frame.ttl > 1 else {
            return refuseRelay("ttlExhausted", frame, session, "its TTL is \(frame.ttl)")
        }
        guard frame.flags & DataFrame.sealedFlag != 0 else {
            // The destination accepts an unsealed message only from its origin's own
            // link, so relaying one could only end in a drop.
            return refuseRelay("unsealed", frame, session, "it is not sealed, so no relay may carry it")
        }
        var known = await delivery.queue.record(frame.messageID)
        // This node's own message taken back: it keeps the digest its receipt is
        // checked against.
        var ownDigest: [UInt8] = []
        if frame.origin == localPeerID, let record = known {
            // This node's own message or receipt, back round a loop (rule 3(b)).
            if let answer = ownCopyReturned(frame, record, from: session) { return answer }
            ownDigest = record.contentDigest
            known = nil
        }
        if let record = known, record.flags & DataFrame.floodFlag != 0, frame.flags & DataFrame.floodFlag == 0 {
            // An ordinary copy of a message this node knows as a flood copy (§A.9). If
            // that copy is final it may have been released without being handed on
            // (suppressed, covered): custody is taken again. Otherwise the held copy now
            // carries this hop's custody and will not be released unsent.
            if record.status.isFinal {
                known = nil
            } else if record.flags & DataFrame.floodStartedLocalFlag == 0,
                !delivery.flood.noteCustody(frame.messageID, ttl: frame.ttl - 1)
            {
                // The flood copy is being let go this moment: refused, so its sender
                // keeps custody and offers it again, when this node takes it back.
                return refuseRelay("floodReleasing", frame, session, "its flood copy here is being released")
            }
        }
        if let record = known {
            // The neighbour it came from and the TTL it came with: remembered in memory,
            // and kept with the queue's record (its TTL there is one lower) so that a
            // restart (or the memory's bound) does not make a copy coming round a loop
            // look like a retry.
            let remembered = state.withLock { $0.relayedFrom[frame.messageID] }
            let from = remembered?.peer ?? record.previousHop
            // (A flood copy's record has a flood TTL, not this copy's: left out.)
            let cameWith =
                remembered?.ttl ?? (record.flags & DataFrame.floodFlag == 0 ? record.ttl.map { $0 &+ 1 } : nil)
            let passingOn = record.status == .relayed || !record.status.isFinal
            // A retry of the hop that brought it comes from the same neighbour with the
            // same TTL; a copy that went round a loop back to that neighbour has a lower
            // one (every hop takes one off), and is no retry.
            let cameRound = from != session.remote || cameWith.map { frame.ttl < $0 } == true
            if passingOn, let from, cameRound {
                // It came from another neighbour, and this node holds it, is handing
                // it on, or handed it on: it went round a loop (or came a second way).
                if record.status == .relayed,
                    delivery.routes.nextHop(for: frame.destination, now: clock.now) != session.remote
                {
                    // Handed on earlier, and this node's route no longer leads back to
                    // the neighbour offering it (it leads elsewhere, or nowhere yet): the
                    // routes changed since (a partition, a restart), so this node takes
                    // custody again and sends it the new way, or holds it until a route
                    // appears (§A.6 rule 3(a)). Refusing would leave it with its holder for
                    // as long as that holder's (perhaps stale) route points here.
                    known = nil
                } else {
                    // Refused, so its holder keeps it until its route changes;
                    // acknowledging it while this node's own copy is being handed on
                    // would drop both.
                    return refuseRelay("loop", frame, session, "this node relays it already (it came from \(from))")
                }
            }
        }
        if known != nil {
            stats.update { $0.duplicatesDropped += 1 }
            return .duplicate
        }
        // Budgets: receipts travelling back are never refused for them (they answer
        // messages that already passed), everything else is. The message is reserved
        // now and given back unless it is taken into custody below.
        let isReceipt = frame.flags & DataFrame.receiptFlag != 0
        if !isReceipt, let refusal = delivery.relayBudget.reserve(from: session.remote) {
            return refuseRelay(refusal.reason, frame, session, refusal.detail)
        }
        var spent = false
        defer { if !isReceipt, !spent { delivery.relayBudget.release(from: session.remote) } }
        let payload: [UInt8]
        switch gather(frame, from: session, checkingDedup: false) {
        case .answer(let result): return result
        case .complete(let bytes): payload = bytes
        }
        // This node's own receipt taken back (rule 3(b)) stays its own: no origin.
        let message = OutboundMessage(
            id: frame.messageID,
            destination: frame.destination,
            payload: payload,
            flags: frame.flags,
            contentDigest: ownDigest,
            origin: frame.origin == localPeerID ? nil : frame.origin,
            ttl: frame.ttl - 1,
            previousHop: session.remote
        )
        do {
            try await delivery.queue.enqueue(message)
        } catch {
            state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
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
            state.handingOver.remove(frame.handOverKey)
            state.relayedFrom[frame.messageID] = (session.remote, frame.ttl)
            state.relayedOrder.append(frame.messageID)
            while state.relayedOrder.count > capacity, let oldest = state.relayedOrder.popFirst() {
                state.relayedFrom[oldest] = nil
            }
        }
        spent = true
        stats.update { $0.relayAccepted += 1 }
        delivery.scheduler.schedule(.message(frame.messageID, frame.destination))
        return .accepted
    }

    /// What to answer to a copy of this node's own message (or receipt) that came back
    /// round a loop (§A.6 rule 3(b)); nil to take it into custody again.
    private func ownCopyReturned(
        _ frame: DataFrame,
        _ record: OutboundRecord,
        from session: LinkSession
    ) -> LinkSession.AcceptResult? {
        if !record.status.isFinal {
            // Sent (its first hop took it) and waiting for its receipt, and this node's
            // route no longer leads back to the neighbour offering it: the routes have
            // changed, and the holder's route now points at this node. Taken back into
            // custody, as a relay takes a copy back (rule 3(a)), and sent the new way;
            // refusing would leave it with its holder, retrying, for as long as that
            // route lasts. (The queue lets a `sent` message start over when it comes
            // with the neighbour it came back from.)
            if record.status == .sent, delivery.routes.nextHop(for: frame.destination, now: clock.now) != session.remote
            {
                return nil
            }
            // Being sent (queued or claimed here), or the route leads straight back:
            // acknowledging it as a duplicate would drop the only copy once this
            // node's own send is acknowledged. Refused, like any loop, so its holder
            // keeps it.
            return refuseRelay("loop", frame, session, "this node sent it and it came back")
        }
        guard frame.flags & DataFrame.receiptFlag != 0, record.status == .delivered else {
            // Delivered (its receipt came back), failed or expired: nothing is owed.
            stats.update { $0.duplicatesDropped += 1 }
            return .duplicate
        }
        // A receipt is final here once its first hop took it, not once it arrived: this
        // copy is the one still moving. Taken back unless this node would send it straight
        // back (then refused, so its holder keeps it) — never dropped as a duplicate.
        guard delivery.routes.nextHop(for: frame.destination, now: clock.now) != session.remote else {
            return refuseRelay("loop", frame, session, "this node sent this receipt and it came back")
        }
        return nil
    }

    private func refuseRelay(
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
            "relay_refused.\(reason)",
            "not relaying message \(frame.messageID) from \(frame.origin) to \(frame.destination) (via \(session.remote)): \(detail)"
        ) {
            "refused \(LogLimiter.formatted($0)) more messages to relay in the last \(LogLimiter.formatted($1)): \(reason)"
        }
        return .refused
    }
}
