import Logging
import Synchronization

extension LinkSession {
    // MARK: Receiving

    func handleAck(_ ack: AckFrame) throws(MeshError) {
        let now = clock.now
        var resumes: [CheckedContinuation<Void, any Error>] = []
        try state.withLock { state throws(MeshError) in
            guard ack.cumulative < state.nextSequence else {
                throw MeshError(
                    .malformedFrame,
                    "ack for sequence \(ack.cumulative) which was never sent (next is \(state.nextSequence))"
                )
            }
            var newest: ContinuousClock.Instant?
            func resolve(_ sequence: UInt32, _ state: inout State) {
                guard var waiter = state.waiters[sequence], waiter.result == nil else { return }
                if let sentAt = waiter.sentAt { newest = max(newest ?? sentAt, sentAt) }
                if let continuation = waiter.continuation {
                    state.waiters[sequence] = nil
                    resumes.append(continuation)
                } else {
                    waiter.result = .success(())
                    state.waiters[sequence] = waiter
                }
            }
            if ack.cumulative > state.ackedThrough {
                let span = Int(ack.cumulative - state.ackedThrough)
                if span <= state.waiters.count {
                    for sequence in (state.ackedThrough + 1)...ack.cumulative { resolve(sequence, &state) }
                } else {
                    for sequence in state.waiters.keys where sequence <= ack.cumulative { resolve(sequence, &state) }
                }
                state.ackedThrough = ack.cumulative
            }
            for sequence in ack.selective where sequence > state.ackedThrough && sequence < state.nextSequence {
                resolve(sequence, &state)
            }
            if let newest {
                sample(rtt: now - newest, &state)
                state.consecutiveFailures = 0
            }
        }
        for continuation in resumes { continuation.resume() }
    }

    func sample(rtt: Duration, _ state: inout State) {
        let seconds = PriorityEscalationPolicy.seconds(rtt)
        if let smoothed = state.smoothedRTT {
            state.smoothedRTT = smoothed * 0.875 + seconds * 0.125
        } else {
            state.smoothedRTT = seconds
        }
    }

    /// Where the reader hands what it reads, by kind of frame.
    struct Handlers: Sendable {
        /// Takes an inbound DATA frame (delivery, custody or relay) and says what to
        /// answer.
        var deliver: @Sendable (DataFrame, LinkSession) async -> AcceptResult
        /// Takes a routing frame (ANNOUNCE, ROUTE REQUEST, SUMMARY, LISTING, HOPS).
        var announce: @Sendable (Frame, LinkSession) -> Void
        /// Takes an ADDRESSES frame.
        var addresses: @Sendable (AddressesFrame, LinkSession) -> Void = { _, _ in }
        /// Takes a topic frame.
        var topic: @Sendable (Frame, LinkSession) async -> Void
        /// Hears of input that ends the link (a frame that fails to decrypt or decode).
        var onMalformed: @Sendable (MeshError) async -> Void
    }

    /// Runs the reader, control writer and ticker until the link ends, on the link's
    /// ``Link/preferredTaskExecutor`` when it names one (the global pool otherwise).
    /// - Parameter handlers: where the reader hands each frame.
    /// - Returns: why the link ended.
    func run(_ handlers: Handlers) async -> String {
        let executor = link.preferredTaskExecutor
        let reason: String = await withTaskGroup(of: String?.self) { group in
            group.addTask(executorPreference: executor) {
                await self.readLoop(handlers)
            }
            group.addTask(executorPreference: executor) {
                await self.controlLoop()
                return nil
            }
            group.addTask(executorPreference: executor) { await self.tickLoop() }
            var reason: String?
            while reason == nil, let next = await group.next() {
                reason = next
            }
            let why = reason ?? "closed"
            await self.close(MeshError(.linkClosed, "link \(self.id) to \(self.remote) closed: \(why)"))
            group.cancelAll()
            return why
        }
        return reason
    }

    func controlLoop() async {
        for await _ in controlStream {
            let now = clock.now
            var known = 0
            let frames: [Frame] = state.withLock { state in
                var frames: [Frame] = []
                if state.received.ackOwed { frames.append(.ack(state.received.takeAck())) }
                for nonce in state.pongsOwed { frames.append(.pong(nonce: nonce)) }
                state.pongsOwed.removeAll()
                if state.pingOwed {
                    state.pingOwed = false
                    state.pingNonce &+= 1
                    state.pingSentAt = (state.pingNonce, now)
                    state.lastPingSent = now
                    frames.append(.ping(nonce: state.pingNonce))
                }
                let heard = state.heard
                frames.append(
                    contentsOf: state.announces.take(
                        now: now,
                        known: { frame in
                            guard let held = heard[frame.origin] else { return false }
                            return held.sequence > frame.sequence
                                || (held.sequence == frame.sequence && held.hops <= frame.hops &+ 1)
                        },
                        dropped: &known
                    )
                )
                if let record = state.addressesOwed {
                    state.addressesOwed = nil
                    frames.append(.addresses(record))
                }
                frames.append(contentsOf: state.gossip.take(limit: Self.gossipBatch))
                return frames
            }
            // Due later: the ping's retry, and announcements held back by the budget.
            let later: ContinuousClock.Instant? = state.withLock { state in
                let retry = state.pingSentAt.map { $0.at + keepalive.interval + .nanoseconds(1) }
                let announce = state.announces.nextDue(now: now)
                return [retry, announce].compactMap { $0 }.min()
            }
            if let later { ticker.wake(before: later) }
            if known > 0 { stats.update { $0.announcesSuppressed += known } }
            guard !frames.isEmpty else { continue }
            do {
                try await writeControl(frames)
            } catch {
                return
            }
            if !state.withLock({ $0.gossip.isEmpty }) { controlSignal.yield() }
            let announces = frames.count(where: { if case .announce = $0 { true } else { false } })
            if announces > 0 { stats.update { $0.announcesSent += announces } }
            let requests = frames.count(where: { if case .routeRequest = $0 { true } else { false } })
            if requests > 0 { stats.update { $0.routeRequests["sent", default: 0] += requests } }
            let summaries = frames.count(where: { if case .routeSummary = $0 { true } else { false } })
            if summaries > 0 { stats.update { $0.routeSummaries["sent", default: 0] += summaries } }
        }
    }

    /// Times out waiters, pings idle or degraded links, detects dead links, watches
    /// writes. It sleeps until the earliest of these is due (``nextTick(now:writes:)``)
    /// and is woken sooner by ``ticker`` when something new may be due earlier, so an
    /// idle link costs a wake-up every few seconds, not one every tick.
    func tickLoop() async -> String? {
        var writes = WriteStallDetector(
            timeout: configuration.linkWriteStallTimeout,
            degradeAfter: min(configuration.escalation.ackTimeoutMax, configuration.linkWriteStallTimeout / 2)
        )
        var wake = clock.now + writes.degradeAfter
        while true {
            guard await ticker.sleep(until: wake, on: clock) else { return nil }
            let now = clock.now
            let interval = keepalive.interval
            var expired: [CheckedContinuation<Void, any Error>] = []
            var wantPing = false
            var dead = false
            state.withLock { state in
                for (sequence, waiter) in state.waiters {
                    guard let deadline = waiter.deadline, let continuation = waiter.continuation, deadline <= now else {
                        continue
                    }
                    state.waiters[sequence] = nil
                    expired.append(continuation)
                }
                if !expired.isEmpty { state.consecutiveFailures += 1 }
                let idle = now - state.lastReceived
                if idle > interval * 3 {
                    dead = true
                } else if state.pingSentAt.map({ now - $0.at > interval }) ?? false {
                    state.pingSentAt = nil  // unanswered; try again
                }
                let degraded = state.consecutiveFailures >= configuration.escalation.degradeAfterFailures
                let pingEvery = degraded ? min(interval, .seconds(1)) : interval
                if state.pingSentAt == nil && (now - state.lastPingSent > pingEvery)
                    && (degraded || idle > pingEvery / 2)
                {
                    wantPing = true
                    state.pingOwed = true
                }
            }
            for continuation in expired {
                continuation.resume(
                    throwing: MeshError(
                        .ackTimeout,
                        "no hop acknowledgement on \(transport) \(id) within the ack timeout"
                    )
                )
            }
            if state.withLock({ $0.received.expire(now: now) }) { controlSignal.yield() }
            if dead {
                return "no traffic for \(interval * 3) (dead link)"
            }
            if wantPing || state.withLock({ $0.announces.nextDue(now: now).map { $0 <= now } ?? false }) {
                controlSignal.yield()
            }
            if let stalled = checkWrites(&writes, now: now) { return stalled }
            // Never sooner than 1 ms from now (a busy link is looked at no more often),
            // never later than a write could start and wait `degradeAfter`.
            wake = max(nextTick(now: now, writes: writes), now + .milliseconds(1))
        }
    }

    /// The earliest instant something the ticker handles is due: an ack deadline, a
    /// missing sequence number's expiry (``ReceiveWindow``), the next ping or its retry, the dead-link time,
    /// announcements held by the budget, the write detector's next decision; and at the
    /// latest `degradeAfter` from now, so a write that starts meanwhile is looked at
    /// before it has waited that long. (Conditions that hold when a time is *passed*
    /// are due 1 ns after it.)
    func nextTick(now: ContinuousClock.Instant, writes: WriteStallDetector) -> ContinuousClock.Instant {
        let after = Duration.nanoseconds(1)
        var earliest = writes.nextDecision.map { min($0, now + writes.degradeAfter) } ?? now + writes.degradeAfter
        state.withLock { state in
            for waiter in state.waiters.values {
                if let deadline = waiter.deadline, waiter.continuation != nil { earliest = min(earliest, deadline) }
            }
            if let expiry = state.received.nextExpiry { earliest = min(earliest, expiry) }
            let keepalive = self.keepalive.interval
            earliest = min(earliest, state.lastReceived + keepalive * 3 + after)
            if let ping = state.pingSentAt {
                earliest = min(earliest, ping.at + keepalive + after)
            } else if !state.pingOwed {
                let degraded = state.consecutiveFailures >= configuration.escalation.degradeAfterFailures
                let pingEvery = degraded ? min(keepalive, .seconds(1)) : keepalive
                let due = state.lastPingSent + pingEvery + after
                earliest = min(earliest, degraded ? due : max(due, state.lastReceived + pingEvery / 2 + after))
            }
            // Announcements the budget lets out now are the control writer's (it was
            // signalled, and takes them after a write that may be waiting); only a
            // budget that must refill first needs the ticker.
            if let announce = state.announces.nextDue(now: now), announce > now { earliest = min(earliest, announce) }
        }
        return earliest
    }

    /// Drops the link when its writes stopped moving (the remote does not read), and
    /// ranks it after healthy links once a write has waited a while.
    /// - Returns: why the link ends, or nil while writes move.
    private func checkWrites(_ detector: inout WriteStallDetector, now: ContinuousClock.Instant) -> String? {
        let started = writesStarted.load(ordering: .acquiring)
        let finished = writesFinished.load(ordering: .relaxed)
        let since = epoch + .nanoseconds(writeStartedAt.load(ordering: .relaxed))
        switch detector.observe(started: started, finished: finished, pendingSince: since, now: now) {
        case .flowing, .waiting:
            return nil
        case .degraded:
            // New frames go out on another link first; the next ack or pong makes
            // the link healthy again.
            state.withLock { state in
                state.consecutiveFailures = max(
                    state.consecutiveFailures,
                    configuration.escalation.degradeAfterFailures
                )
            }
            return nil
        case .stalled(let waited):
            endedByWriteStall.store(true, ordering: .relaxed)
            return "the remote stopped reading: a write waited \(waited) with none finishing "
                + "(link_write_stall_timeout_ms \(configuration.linkWriteStallTimeout))"
        }
    }
}
