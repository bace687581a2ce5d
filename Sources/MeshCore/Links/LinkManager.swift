import DequeModule
import Logging
import ServiceLifecycle
import Synchronization

/// Runs the transports and keeps the links: each transport's `listen`, discovery
/// hints, dialling with backoff, the handshake on every link, the link table and its
/// tie-break. Every task it starts is a child of ``run()``.
actor LinkManager {
    struct TransportEntry {
        var transport: any Transport
        var priority: Int
        var status: TransportStatus
        /// Switched off at run time: not run, its hints not dialled.
        var disabled = false
        /// Ends the running `listen` (finished by ``disable(_:)``).
        var stopper: AsyncStream<Void>.Continuation?
        /// Whether a `listen` of this entry is running (a new one waits for it to end).
        var listening = false
        /// Callers of ``disable(_:)`` waiting for the running `listen` to end.
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    struct HintKey: Hashable {
        var transport: String
        var address: String
    }

    enum RunState { case idle, running, stopping, stopped }

    nonisolated let localPeerID: PeerID
    nonisolated let table: LinkTable
    let security: any LinkSecurity
    let configuration: RouterConfiguration
    nonisolated let clock: any MeshClock
    nonisolated let bus: EventBus
    nonisolated let stats: StatsRecorder
    nonisolated let logger: Logger
    nonisolated let inbound: InboundPipeline
    nonisolated let announcer: Announcer
    nonisolated let gossip: GossipRouter
    nonisolated let remoteLog: LogLimiter
    /// The names peers claimed in their last handshake.
    nonisolated let peerNames = PeerNames()
    /// The name this node claims in its handshakes (nil: none).
    nonisolated let announcedName = Mutex<String?>(nil)

    private(set) var runState = RunState.idle
    /// Every peer an authenticated link came up with since the start (bounded).
    private var peersMet: Set<PeerID> = []
    /// The sequence of this node's last address record (docs/PROTOCOL.md §A.8).
    var addressSequence: UInt64
    var transports: [String: TransportEntry] = [:]
    /// The pacing last set (``setPacing(_:)``), given to each transport before it starts.
    var pacing = TransportPacing.configured
    /// The keepalive interval every link reads.
    nonisolated let keepalive: PacedInterval
    private(set) var transportOrder: [String] = []
    private(set) var hints: [HintKey: PeerHint] = [:]
    var hintPeers: [HintKey: PeerID] = [:]
    /// Hints dialled on request (an invitation, an address record, the ledger): each
    /// is dropped after this many failed dials in a row spanning at least
    /// ``Router/requestedDialPersistence``, so an address given by someone else is
    /// never dialled for ever.
    private var dialFailureLimits: [HintKey: Int] = [:]
    private var dialing: Set<HintKey> = []
    /// Links in their handshake; inbound ones also in arrival order (for eviction).
    private var pendingLinks: [LinkID: any Link] = [:]
    private var pendingInbound = Deque<LinkID>()
    private var evicted: Set<LinkID> = []
    /// How far pending links got, written by their handshake tasks as it happens (not
    /// on the actor, which may be busy admitting strangers).
    nonisolated let handshakeProgress = Mutex(HandshakeProgress())

    struct HandshakeProgress {
        /// The remote sent a handshake message: evicted only when no silent link is
        /// left, so idle strangers go before an honest peer mid-handshake.
        var heard: Set<LinkID> = []
        /// The handshake succeeded: no longer counted against the budget, never evicted.
        var done: Set<LinkID> = []
    }
    /// Called for every link that came up (after the table has it).
    private var linkUpHandler: (@Sendable (PeerID) async -> Void)?

    private nonisolated let spawnStream: AsyncStream<@Sendable () async -> Void>
    private nonisolated let spawnContinuation: AsyncStream<@Sendable () async -> Void>.Continuation

    init(
        security: any LinkSecurity,
        configuration: RouterConfiguration,
        clock: any MeshClock,
        table: LinkTable,
        inbound: InboundPipeline,
        announcer: Announcer,
        gossip: GossipRouter,
        bus: EventBus,
        stats: StatsRecorder,
        logger: Logger,
        remoteLog: LogLimiter
    ) {
        self.localPeerID = security.localPeerID
        self.security = security
        self.configuration = configuration
        self.clock = clock
        self.table = table
        self.inbound = inbound
        self.announcer = announcer
        self.gossip = gossip
        self.bus = bus
        self.stats = stats
        self.logger = logger
        self.remoteLog = remoteLog
        keepalive = PacedInterval(configured: configuration.keepaliveInterval)
        addressSequence = configuration.routing.firstSequence ?? UInt64.random(in: 1...(UInt64.max >> 2))
        (spawnStream, spawnContinuation) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
    }

    /// Sets what runs (as a child task of ``run()``) each time a link comes up.
    func onLinkUp(_ handler: @escaping @Sendable (PeerID) async -> Void) {
        linkUpHandler = handler
    }

    func add(_ transport: any Transport, priority: Int, enabled: Bool = true) {
        precondition(transports[transport.name] == nil, "transport \(transport.name) added twice")
        transports[transport.name] = TransportEntry(
            transport: transport,
            priority: priority,
            status: TransportStatus(name: transport.name, priority: priority, state: enabled ? .starting : .disabled),
            disabled: !enabled
        )
        transportOrder.append(transport.name)
        if runState == .running, enabled {
            let name = transport.name
            spawn { await self.runTransport(name) }
        }
    }

    var transportStatus: [TransportStatus] { transportOrder.compactMap { transports[$0]?.status } }

    func priority(of transport: String) -> Int? { transports[transport]?.priority }

    func capabilities(of transport: String) -> TransportCapabilities? { transports[transport]?.transport.capabilities }

    /// Holds a link in its handshake (counted, closed at shutdown) until ``forgetPending(_:)``.
    func trackPending(_ link: any Link, id: LinkID) {
        pendingLinks[id] = link
    }

    func forgetPending(_ id: LinkID) {
        pendingLinks[id] = nil
        evicted.remove(id)
        handshakeProgress.withLock { progress in
            progress.heard.remove(id)
            progress.done.remove(id)
        }
    }

    /// Whether the link was closed to make room for a newer unauthenticated one.
    func wasEvicted(_ id: LinkID) -> Bool { evicted.contains(id) }

    /// Counts an inbound link against the budget of unauthenticated links, closing one
    /// still in its handshake when the budget is full: the oldest that has sent
    /// nothing, or the oldest of all when every one has. A link whose handshake
    /// succeeded no longer counts.
    private func admitInbound(_ link: any Link, id: LinkID) {
        let progress = handshakeProgress.withLock { $0 }
        pendingInbound.removeAll { pendingLinks[$0] == nil || progress.done.contains($0) }
        while pendingInbound.count >= configuration.maxUnauthenticatedLinks {
            let index = pendingInbound.firstIndex { !progress.heard.contains($0) } ?? pendingInbound.startIndex
            let oldest = pendingInbound.remove(at: index)
            guard let victim = pendingLinks[oldest] else { continue }
            evicted.insert(oldest)
            stats.update { $0.unauthenticatedLinksEvicted += 1 }
            logger.debug(
                "closing unauthenticated link from \(victim.remoteAddress): \(configuration.maxUnauthenticatedLinks) links are in their handshake (max_unauthenticated_links)"
            )
            spawn { await victim.close() }
        }
        pendingLinks[id] = link
        pendingInbound.append(id)
    }

    func linkCameUp(_ peer: PeerID) {
        if peersMet.count < 1 << 20, peersMet.insert(peer).inserted { stats.update { $0.peersMet += 1 } }
        guard let handler = linkUpHandler else { return }
        spawn { await handler(peer) }
    }

    // MARK: Lifecycle

    func run() async throws {
        guard runState == .idle else {
            throw MeshError(.invalidArgument, "Router.run() was called twice")
        }
        runState = .running
        let remoteLog = self.remoteLog
        spawn { await remoteLog.run() }  // summaries of rate-limited lines, every interval
        for name in transportOrder where transports[name]?.disabled == false {
            spawn { await self.runTransport(name) }
        }
        for key in hints.keys { ensureDialing(key) }
        let stream = spawnStream
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withDiscardingTaskGroup { group in
                    for await job in stream {
                        group.addTask { await job() }
                    }
                    group.cancelAll()
                }
            } onCancel: {
                Task { await self.shutdown() }
            }
        } onGracefulShutdown: {
            Task { await self.shutdown() }
        }
        runState = .stopped
        for name in transportOrder
        where transports[name]?.status.state != .unavailable && transports[name]?.disabled == false {
            transports[name]?.status.state = .stopped
        }
    }

    /// Closes every link and cancels every transport's `listen`; ``run()`` returns.
    func shutdown() async {
        guard runState == .running || runState == .idle else { return }
        let wasIdle = runState == .idle
        runState = .stopping
        for session in table.all {
            await session.close(MeshError(.notRunning, "the router is shutting down"))
        }
        for link in pendingLinks.values { await link.close() }
        // Transports stop when the task group cancels their `listen` calls.
        spawnContinuation.finish()
        if wasIdle { runState = .stopped }
    }

    nonisolated func spawn(_ job: @escaping @Sendable () async -> Void) {
        spawnContinuation.yield(job)
    }

    // MARK: Transports

    func handle(_ event: TransportEvent, transport name: String) {
        if runState == .idle, case .peerDiscovered(let hint) = event, hint.peerID != localPeerID {
            // Remembered and dialled once the router runs.
            hints[HintKey(transport: name, address: hint.address)] = hint
            return
        }
        guard runState == .running, transports[name]?.disabled != true else {
            if case .inboundLink(let link) = event { Task { await link.close() } }
            return
        }
        switch event {
        case .listening(let addresses):
            let first = transports[name]?.status.state != .running
            let changed = transports[name]?.status.addresses != addresses
            transports[name]?.status.state = .running
            transports[name]?.status.addresses = addresses
            // Neighbours linked before this transport listened (or moved) learn where
            // it listens now (docs/PROTOCOL.md §A.8).
            if first || changed { for session in table.all where !session.isClosed { sendAddresses(on: session) } }
            if first {
                let at = addresses.isEmpty ? "" : " on \(addresses.joined(separator: ", "))"
                logger.info("transport \(name) started (priority \(transports[name]?.priority ?? 0))\(at)")
                bus.emit(.transportStarted(name, addresses: addresses))
            }
        case .peerDiscovered(let hint):
            if hint.peerID == localPeerID { return }
            let key = HintKey(transport: name, address: hint.address)
            hints[key] = hint
            bus.emit(.peerDiscovered(hint))
            ensureDialing(key)
        case .peerLost(let hint):
            let key = HintKey(transport: name, address: hint.address)
            hints[key] = nil
            hintPeers[key] = nil
            dialFailureLimits[key] = nil
            bus.emit(.peerLost(hint))
        case .inboundLink(let link):
            let id = LinkID.next()
            admitInbound(link, id: id)
            spawn { await self.serve(link: link, id: id, role: .responder, transport: name, hint: nil) }
        }
    }

    // MARK: Dialling

    func ensureDialing(_ key: HintKey) {
        guard !dialing.contains(key) else { return }
        dialing.insert(key)
        spawn { await self.dialLoop(key) }
    }

    /// Keeps one link to a hint: dials with exponential backoff and jitter, serves the
    /// link, redials when it drops; ends when the hint is lost or the router stops.
    private func dialLoop(_ key: HintKey) async {
        defer { dialing.remove(key) }
        var attempt = 0
        var failures = 0
        var failingSince: ContinuousClock.Instant?
        if let known = hints[key]?.peerID, localPeerID > known {
            // Both ends discovered each other: let the lower peer ID dial first, so
            // that usually one link, not two, comes up.
            if !(await sleep(configuration.reconnect.jitteredDelay(attempt: 1))) { return }
        }
        while runState == .running, let hint = hints[key] {
            let known = hint.peerID ?? hintPeers[key]
            if let known, table.hasSession(to: known, on: key.transport) {
                // Someone (maybe the remote) already connected us; check again later.
                if !(await sleep(configuration.reconnect.initialDelay)) { return }
                attempt = 0
                continue
            }
            guard let entry = transports[key.transport], !entry.disabled else { return }
            let transport = entry.transport
            do {
                let link = try await transport.dial(hint)
                guard runState == .running else {
                    await link.close()
                    return
                }
                let id = LinkID.next()
                pendingLinks[id] = link
                if let peer = await serve(link: link, id: id, role: .initiator, transport: key.transport, hint: hint) {
                    hintPeers[key] = peer
                    attempt = 0
                    failures = 0
                    failingSince = nil
                } else {
                    attempt += 1
                    failures += 1
                }
            } catch {
                logger.debug("dial \(hint) failed: \(error)")
                attempt += 1
                failures += 1
            }
            if failures == 1 { failingSince = clock.now }
            if let limit = dialFailureLimits[key], failures >= limit, hints[key] == hint,
                let failingSince, failingSince.duration(to: clock.now) >= Router.requestedDialPersistence
            {
                logger.info("giving up on \(hint) after \(failures) failed dials in a row")
                handle(.peerLost(hint), transport: key.transport)
                return
            }
            if !(await sleep(configuration.reconnect.jitteredDelay(attempt: max(0, attempt - 1)))) { return }
        }
    }

    private func sleep(_ duration: Duration) async -> Bool {
        do {
            try await clock.sleep(for: duration)
            return runState == .running
        } catch {
            return false
        }
    }

    /// Asks the manager to keep a link to `hint` (as if discovery had reported it);
    /// with `maxFailures`, it gives up after that many failed dials in a row.
    func connect(to hint: PeerHint, maxFailures: Int? = nil) {
        let key = HintKey(transport: hint.transport, address: hint.address)
        if let maxFailures {
            // A hint discovery reported stays unbounded.
            if hints[key] == nil || dialFailureLimits[key] != nil { dialFailureLimits[key] = maxFailures }
        } else {
            dialFailureLimits[key] = nil
        }
        handle(.peerDiscovered(hint), transport: hint.transport)
    }

    /// Stops dialling every hint given on request that names `peer` (it is no longer
    /// wanted: a removed contact). Hints from discovery stay.
    func forget(peer: PeerID) {
        for (key, hint) in hints where dialFailureLimits[key] != nil && (hint.peerID == peer || hintPeers[key] == peer)
        {
            handle(.peerLost(hint), transport: key.transport)
        }
    }
}
