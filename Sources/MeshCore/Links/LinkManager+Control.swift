import Logging

/// How a dial on request (``LinkManager/dialNow(_:timeout:)``) ended: the peer whose
/// link came up, or why none did.
typealias DialOutcome = AsyncStream<Result<PeerID, MeshError>>.Continuation

// Running transports, and switching them off and on while the router runs.
extension LinkManager {
    // MARK: Transports

    /// Runs one transport's `listen` until the router stops or ``disable(_:)`` ends
    /// it, feeding its events here.
    func runTransport(_ name: String) async {
        guard let entry = transports[name], runState == .running, !entry.disabled, !entry.listening else { return }
        var transportLogger = logger
        transportLogger[metadataKey: "transport"] = "\(name)"
        let (stream, continuation) = AsyncStream.makeStream(of: TransportEvent.self)
        let (stopSignal, stopper) = AsyncStream.makeStream(of: Void.self)
        transports[name]?.stopper = stopper
        transports[name]?.listening = true
        transports[name]?.status.state = .starting
        transports[name]?.status.reason = nil
        let context = TransportContext(localPeerID: localPeerID, logger: transportLogger) { continuation.yield($0) }
        let transport = entry.transport
        if pacing != .configured { await transport.apply(pacing) }
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in stream { await self.handle(event, transport: name) }
                return false
            }
            group.addTask {
                var failure: (any Error)?
                do {
                    try await transport.listen(context: context)
                } catch {
                    failure = error
                }
                continuation.finish()
                stopper.finish()
                await self.transportEnded(name, error: failure)
                return false
            }
            group.addTask {
                for await _ in stopSignal {}
                return true
            }
            // The stop signal ends (disabled, or listen returned): cancel listen.
            while let stopped = await group.next() {
                if stopped { group.cancelAll() }
            }
        }
        transports[name]?.listening = false
        let waiters = transports[name]?.stopWaiters ?? []
        transports[name]?.stopWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Sets the pacing: the keepalive interval at once, the rest through each
    /// transport's ``Transport/apply(_:)`` (running or not; one that starts later gets
    /// it before it listens).
    func setPacing(_ pacing: TransportPacing) async {
        guard pacing != self.pacing else { return }
        self.pacing = pacing
        keepalive.set(pacing.keepaliveInterval)
        logger.info("pacing changed: idle links are pinged every \(keepalive.interval)")
        for name in transportOrder {
            guard let transport = transports[name]?.transport else { continue }
            await transport.apply(pacing)
        }
    }

    func transportEnded(_ name: String, error: (any Error)?) {
        if transports[name]?.disabled == true {
            transports[name]?.status.state = .disabled
            transports[name]?.status.addresses = []
            return
        }
        guard let error, runState == .running || !(error is CancellationError) else {
            if transports[name]?.status.state != .unavailable { transports[name]?.status.state = .stopped }
            return
        }
        let reason = (error as? MeshError)?.message ?? "\(error)"
        transports[name]?.status.state = .unavailable
        transports[name]?.status.reason = reason
        logger.warning("transport \(name) unavailable: \(reason)")
        bus.emit(.transportUnavailable(name, reason: reason))
    }

    /// Switches a transport off: its `listen` is cancelled (its listener and links
    /// close), its links' sessions end and its hints are no longer dialled. Returns
    /// once its `listen` has returned.
    /// - Throws: `.invalidArgument` naming the transports when none has that name.
    func disable(_ name: String) async throws(MeshError) {
        guard transports[name] != nil else { throw unknownTransport(name) }
        guard transports[name]?.disabled == false else { return }
        transports[name]?.disabled = true
        transports[name]?.stopper?.finish()
        for session in table.all where session.transport == name {
            await session.close(MeshError(.notRunning, "transport \(name) was disabled"))
        }
        if transports[name]?.listening == true {
            await withCheckedContinuation { waiter in
                if transports[name]?.listening == true {
                    transports[name]?.stopWaiters.append(waiter)
                } else {
                    waiter.resume()
                }
            }
        }
        transports[name]?.status.state = .disabled
        transports[name]?.status.reason = nil
        transports[name]?.status.addresses = []
        logger.info("transport \(name) disabled")
    }

    /// Switches a disabled transport on again, running `replacement` (a new instance:
    /// a transport's `listen` runs once per instance), and dials its hints again.
    /// - Throws: `.invalidArgument` naming the transports when none has that name.
    func enable(_ replacement: any Transport) throws(MeshError) {
        let name = replacement.name
        guard let entry = transports[name] else { throw unknownTransport(name) }
        guard entry.disabled else { return }
        transports[name]?.transport = replacement
        transports[name]?.disabled = false
        transports[name]?.status.state = .starting
        guard runState == .running else { return }
        spawn { await self.runTransport(name) }
        for key in hints.keys where key.transport == name { ensureDialing(key) }
        logger.info("transport \(name) enabled")
    }

    /// Dials `hint` once now and returns the peer once its link is authenticated and
    /// in the table; the hint is then kept like one given on request (redialled when
    /// the link drops, given up after ``Router/requestedDialFailureLimit`` failures).
    /// - Throws: `.invalidArgument` (no such transport, or it is disabled or not
    ///   running), `.dialFailed`, `.handshakeFailed`, `.timedOut`.
    func dialNow(_ hint: PeerHint, timeout: Duration) async throws -> PeerID {
        guard runState == .running else { throw MeshError(.notRunning, "the router is not running") }
        guard let entry = transports[hint.transport] else { throw unknownTransport(hint.transport) }
        guard !entry.disabled else {
            throw MeshError(
                .invalidArgument,
                "transport \(hint.transport) is disabled; enable it first (scmesh transports enable \(hint.transport))"
            )
        }
        guard entry.status.state == .running else {
            let why = entry.status.reason.map { ": \($0)" } ?? ""
            throw MeshError(.invalidArgument, "transport \(hint.transport) is \(entry.status.state)\(why)")
        }
        let transport = entry.transport
        let (outcomes, outcome) = AsyncStream.makeStream(of: Result<PeerID, MeshError>.self)
        let clock = self.clock
        let peer = try await withThrowingTaskGroup(of: PeerID?.self) { group in
            group.addTask {
                let link: any Link
                do {
                    link = try await transport.dial(hint)
                } catch {
                    let reason = (error as? MeshError)?.message ?? "\(error)"
                    throw MeshError(.dialFailed, "cannot reach \(hint.address) over \(hint.transport): \(reason)")
                }
                await self.serveDialled(link, hint: hint, outcome: outcome)
                for await result in outcomes { return try result.get() }
                throw MeshError(.dialFailed, "the link to \(hint.address) closed before its handshake finished")
            }
            group.addTask {
                try await clock.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let peer = first else {
                throw MeshError(.timedOut, "no link to \(hint.address) over \(hint.transport) within \(timeout)")
            }
            return peer
        }
        let key = HintKey(transport: hint.transport, address: hint.address)
        hintPeers[key] = peer
        connect(
            to: PeerHint(transport: hint.transport, address: hint.address, peerID: peer),
            maxFailures: Router.requestedDialFailureLimit
        )
        return peer
    }

    /// Serves a link dialled on request in the manager's task group, reporting to `outcome`.
    private func serveDialled(_ link: any Link, hint: PeerHint, outcome: DialOutcome) {
        let id = LinkID.next()
        trackPending(link, id: id)
        spawn {
            _ = await self.serve(
                link: link,
                id: id,
                role: .initiator,
                transport: hint.transport,
                hint: hint,
                outcome: outcome
            )
        }
    }

    private func unknownTransport(_ name: String) -> MeshError {
        let known = transportOrder.isEmpty ? "none" : transportOrder.joined(separator: ", ")
        return MeshError(.invalidArgument, "no transport named \"\(name)\" (this node's transports: \(known))")
    }
}
