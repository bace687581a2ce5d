import Logging
import Synchronization

/// The read path of a link: frames read, DATA frames handed to delivery tasks (their
/// commits overlapping), and each delivery settled for the ACK.
extension LinkSession {
    /// Reads frames until the link ends. Each DATA frame is handed to a delivery task
    /// of its own (at most ``maxDeliveriesInFlight`` at once), so frames read while
    /// earlier ones wait for their commit share the next one; a frame is recorded for
    /// the ACK only when its delivery ended (``settle(_:_:overlapped:)``). A chunk of a
    /// multi-chunk message, another copy of a message being delivered and a PING are
    /// handled only after every delivery before them ended. Returns once every
    /// delivery it started ended.
    func readLoop(_ handlers: Handlers) async -> String {
        await withDiscardingTaskGroup(returning: String.self) { group in
            await readFrames(into: &group, handlers)
        }
    }

    /// Ends a DATA frame's delivery: records it for the ACK (accepted or a duplicate),
    /// or notes the refusal (no ACK; the sender retries), and wakes the ticker when
    /// gaps that waited for this delivery may be consumed now.
    func settle(_ frame: DataFrame, _ result: AcceptResult, overlapped: Bool = false) {
        let now = clock.now
        let (owed, expiry): (Bool, ContinuousClock.Instant?) = state.withLock { state in
            if overlapped { state.delivering.remove(frame.messageID) }
            let waited = state.received.nextExpiry == nil
            var owed = false
            var expiry: ContinuousClock.Instant?
            switch result {
            case .accepted, .duplicate:
                let recorded = state.received.record(frame.sequence)
                owed = state.received.retried(frame) || recorded
            case .refused:
                expiry = state.received.refuse(frame, at: now)
            }
            if waited, let next = state.received.nextExpiry { expiry = min(expiry ?? next, next) }
            return (owed, expiry)
        }
        if owed { controlSignal.yield() }
        if let expiry { ticker.wake(before: expiry) }
    }

    /// Waits until every delivery the reader started has ended: it takes the whole
    /// window of deliveries at once, then gives it back.
    private func deliveriesEnded() async throws {
        try await deliveries.acquire(Self.maxDeliveriesInFlight)
        deliveries.release(Self.maxDeliveriesInFlight)
    }

    private func readFrames(into group: inout DiscardingTaskGroup, _ handlers: Handlers) async -> String {
        let deliver = handlers.deliver
        var reassembler = PacketReassembler()
        do {
            while let packet = try await link.receive() {
                let now = clock.now
                state.withLock { $0.lastReceived = now }
                let segment: [UInt8]
                switch try reassembler.feed(packet) {
                case .needMore: continue
                case .segment(let bytes): segment = bytes
                }
                let plain: [UInt8]
                do {
                    plain = try cipher.open(segment)
                } catch {
                    let meshError =
                        (error as? MeshError) ?? MeshError(.malformedFrame, "frame failed to decrypt", cause: error)
                    await handlers.onMalformed(meshError)
                    return "rejected input: \(meshError.message)"
                }
                framesRead.add(1, ordering: .relaxed)
                guard let frame = try Frame.decodeInbound(plain, maxMessageLength: configuration.maxMessageSize) else {
                    // A type this release does not know: ignored, never a reason to close.
                    stats.update { $0.framesIgnored[Frame.Kind.name(ofRaw: plain[1]), default: 0] += 1 }
                    continue
                }
                guard shared.isSuperset(of: Capabilities.required(for: frame.kind)) else {
                    // A feature one end did not announce (or this node switched off).
                    stats.update { $0.framesIgnored[frame.kind.name, default: 0] += 1 }
                    continue
                }
                if case .topicMessage(let message) = frame, message.publishedMillis != nil,
                    !shared.contains(.topicTime)
                {
                    // Format 2 on a link that does not share `topic_time` (§A.7).
                    stats.update { $0.framesIgnored["topic_message_v2", default: 0] += 1 }
                    continue
                }
                switch frame {
                case .data(let arrived):
                    // Handled in link order, after every delivery before it ended: a
                    // chunk of a multi-chunk message (reassembled in order, so one
                    // peer's partial messages stay within its reassembly share), and
                    // another copy of a message being delivered (the first copy's
                    // outcome decides this one: a duplicate, or the copy to keep).
                    let ordered =
                        arrived.chunkCount > 1 || state.withLock { $0.delivering.contains(arrived.messageID) }
                    if ordered { try await deliveriesEnded() }
                    // A full window of deliveries makes the reader wait; the link's
                    // close fails the wait.
                    try await deliveries.acquire()
                    let expiry = state.withLock { state in
                        state.received.delivering(arrived.sequence)
                        if !ordered { state.delivering.insert(arrived.messageID) }
                        return state.received.arrived(arrived.sequence, at: now)
                    }
                    if let expiry { ticker.wake(before: expiry) }
                    let frame = inbound(arrived)
                    if ordered {
                        settle(arrived, await deliver(frame, self))
                        deliveries.release()
                    } else {
                        group.addTask(executorPreference: link.preferredTaskExecutor) {
                            let result = await deliver(frame, self)
                            self.settle(arrived, result, overlapped: true)
                            self.deliveries.release()
                        }
                    }
                case .ack(let ack):
                    try handleAck(ack)
                case .announce, .routeRequest, .routeSummary, .routeListing, .routeHops:
                    handlers.announce(frame, self)
                case .addresses(let record):
                    handlers.addresses(record, self)
                case .topicMessage, .topicControl:
                    await handlers.topic(frame, self)
                case .ping(let nonce):
                    // Answered once every DATA frame before it was handled: its PONG
                    // says the frames ahead of it on the link were decided.
                    try await deliveriesEnded()
                    state.withLock { state in
                        if state.pongsOwed.count < 16 { state.pongsOwed.append(nonce) }
                    }
                    controlSignal.yield()
                case .pong(let nonce):
                    let now = clock.now
                    state.withLock { state in
                        if let ping = state.pingSentAt, ping.nonce == nonce {
                            sample(rtt: now - ping.at, &state)
                            state.pingSentAt = nil
                            state.consecutiveFailures = 0
                        }
                    }
                    ticker.wake(before: now)  // the next ping's time moved
                }
            }
            if let closed = state.withLock({ $0.closed }) { return closed.message }
            return "remote closed the link"
        } catch let error as MeshError where error.code == .malformedFrame || error.code == .frameTooLarge {
            await handlers.onMalformed(error)
            return "rejected input: \(error.message)"
        } catch {
            // Closed on our side (shutdown, duplicate, dead link): say why, not how the
            // read ended.
            if let closed = state.withLock({ $0.closed }) { return closed.message }
            if error is CancellationError { return "the router is stopping" }
            let reason = (error as? MeshError)?.message ?? "\(error)"
            return "link failed: \(reason)"
        }
    }
}
