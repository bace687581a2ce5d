import Logging
import ServiceLifecycle
import Synchronization

/// The transport-agnostic router: runs every configured transport, authenticates
/// every link, keeps the peer table and sends messages over the best link, escalating
/// to the next transport on error or ack timeout.
///
/// ```swift
/// let router = Router(security: PlaintextLinkSecurity(localPeerID: id), logger: logger)
/// await router.add(tcp, priority: 30)
/// try await ServiceGroup(services: [router], logger: logger).run()
/// ```
///
/// ``send(to:payload:)`` returns when the next hop acknowledged every chunk, or throws
/// a ``MeshError`` saying why (`.noRoute`, `.deliveryFailed`, `.relayDisabled`,
/// `.messageTooLarge`). Inbound messages arrive on ``incoming``.
public actor Router: Service {
    /// This node's peer ID.
    public nonisolated let localPeerID: PeerID
    /// Messages for this node, in arrival order. One consumer; when it falls behind,
    /// links are slowed down rather than messages dropped.
    public nonisolated let incoming: BoundedChannel<InboundMessage>

    private let security: any LinkSecurity
    private let sealer: (any MessageSealer)?
    private let configuration: RouterConfiguration
    private let policy: any RoutingPolicy
    private let logger: Logger

    private struct TransportEntry {
        var transport: any Transport
        var priority: Int
        var status: TransportStatus
    }

    private struct HintKey: Hashable {
        var transport: String
        var address: String
    }

    private enum RunState { case idle, running, stopping, stopped }

    private var runState = RunState.idle
    private var transports: [String: TransportEntry] = [:]
    private var transportOrder: [String] = []
    private var sessions: [LinkID: LinkSession] = [:]
    private var sessionsByPeer: [PeerID: [LinkID]] = [:]
    private var hints: [HintKey: PeerHint] = [:]
    private var hintPeers: [HintKey: PeerID] = [:]
    private var dialing: Set<HintKey> = []
    private var pendingLinks: [LinkID: any Link] = [:]
    private var activePath: [PeerID: String] = [:]
    private var lastFailure: [PeerID: String] = [:]
    private var assembler: MessageAssembler
    private var dedup: DedupCache
    private var counters = RouterStats()
    private var subscribers: [Int: AsyncStream<RouterEvent>.Continuation] = [:]
    private var nextSubscriber = 0

    private nonisolated let spawnStream: AsyncStream<@Sendable () async -> Void>
    private nonisolated let spawnContinuation: AsyncStream<@Sendable () async -> Void>.Continuation

    /// Creates a router.
    /// - Parameters:
    ///   - security: runs the handshake on every link (``PlaintextLinkSecurity`` or
    ///     MeshCrypto's Noise XX).
    ///   - configuration: timeouts, limits and the relay switch.
    ///   - policy: the routing policy; defaults to ``PriorityEscalationPolicy`` built
    ///     from `configuration.escalation`.
    ///   - sealer: seals payloads end to end (MeshCrypto's `EnvelopeSealer`); nil
    ///     sends payloads protected by the link encryption only.
    ///   - logger: where the router logs.
    public init(
        security: any LinkSecurity, configuration: RouterConfiguration = .init(), policy: (any RoutingPolicy)? = nil,
        sealer: (any MessageSealer)? = nil, logger: Logger
    ) {
        self.localPeerID = security.localPeerID
        self.security = security
        self.sealer = sealer
        self.configuration = configuration
        self.policy = policy ?? PriorityEscalationPolicy(configuration: configuration.escalation)
        self.logger = logger
        self.incoming = BoundedChannel(capacity: configuration.inboxCapacity)
        self.assembler = MessageAssembler(limits: configuration.reassembly)
        self.dedup = DedupCache(capacity: configuration.dedupCapacity)
        (spawnStream, spawnContinuation) = AsyncStream.makeStream(of: (@Sendable () async -> Void).self)
    }

    /// Adds a transport with its priority (lower = preferred). Call before ``run()``.
    public func add(_ transport: any Transport, priority: Int) {
        precondition(transports[transport.name] == nil, "transport \(transport.name) added twice")
        transports[transport.name] = TransportEntry(
            transport: transport, priority: priority,
            status: TransportStatus(name: transport.name, priority: priority, state: .starting))
        transportOrder.append(transport.name)
        if runState == .running {
            let name = transport.name
            spawn { await self.runTransport(name) }
        }
    }

    // MARK: Lifecycle

    /// Starts every transport and serves links until ``shutdown()``, graceful
    /// shutdown of the service group, or cancellation.
    public func run() async throws {
        guard runState == .idle else {
            throw MeshError(.invalidArgument, "Router.run() was called twice")
        }
        runState = .running
        for name in transportOrder {
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
        incoming.finish()
        for continuation in subscribers.values { continuation.finish() }
        subscribers.removeAll()
    }

    /// Stops every transport, closes every link and makes ``run()`` return.
    public func shutdown() async {
        guard runState == .running || runState == .idle else { return }
        let wasIdle = runState == .idle
        runState = .stopping
        // Transports stop when their `listen` tasks are cancelled, below.
        for session in sessions.values {
            await session.close(MeshError(.notRunning, "the router is shutting down"))
        }
        for link in pendingLinks.values { await link.close() }
        spawnContinuation.finish()
        if wasIdle { runState = .stopped }
    }

    private nonisolated func spawn(_ job: @escaping @Sendable () async -> Void) {
        spawnContinuation.yield(job)
    }

    /// Runs one transport's `listen` until the router stops (cancellation), feeding
    /// its events to the router.
    private func runTransport(_ name: String) async {
        guard let entry = transports[name], runState == .running else { return }
        var transportLogger = logger
        transportLogger[metadataKey: "transport"] = "\(name)"
        let (stream, continuation) = AsyncStream.makeStream(of: TransportEvent.self)
        let context = TransportContext(localPeerID: localPeerID, logger: transportLogger) { continuation.yield($0) }
        let transport = entry.transport
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await event in stream { await self.handle(event, transport: name) }
            }
            let outcome: (any Error)?
            do {
                try await transport.listen(context: context)
                outcome = nil
            } catch {
                outcome = error
            }
            continuation.finish()
            self.transportEnded(name, error: outcome)
        }
    }

    private func transportEnded(_ name: String, error: (any Error)?) {
        guard let error, !(error is CancellationError) || runState == .running else {
            transports[name]?.status.state = .stopped
            return
        }
        let reason = (error as? MeshError)?.message ?? "\(error)"
        transports[name]?.status.state = .unavailable
        transports[name]?.status.reason = reason
        logger.warning("transport \(name) unavailable: \(reason)")
        emit(.transportUnavailable(transport: name, reason: reason))
    }

    private func handle(_ event: TransportEvent, transport name: String) {
        if runState == .idle, case .peerDiscovered(let hint) = event, hint.peerID != localPeerID {
            // Remembered and dialled once the router runs.
            hints[HintKey(transport: name, address: hint.address)] = hint
            return
        }
        guard runState == .running else {
            if case .inboundLink(let link) = event { Task { await link.close() } }
            return
        }
        switch event {
        case .listening(let addresses):
            let first = transports[name]?.status.state != .running
            transports[name]?.status.state = .running
            transports[name]?.status.addresses = addresses
            if first {
                let at = addresses.isEmpty ? "" : " on \(addresses.joined(separator: ", "))"
                logger.info("transport \(name) started (priority \(transports[name]?.priority ?? 0))\(at)")
                emit(.transportStarted(transport: name))
            }
        case .peerDiscovered(let hint):
            if hint.peerID == localPeerID { return }
            let key = HintKey(transport: name, address: hint.address)
            hints[key] = hint
            emit(.peerDiscovered(hint))
            ensureDialing(key)
        case .peerLost(let hint):
            let key = HintKey(transport: name, address: hint.address)
            hints[key] = nil
            hintPeers[key] = nil
            emit(.peerLost(hint))
        case .inboundLink(let link):
            let linkID = LinkID.next()
            pendingLinks[linkID] = link
            spawn { await self.serve(link: link, id: linkID, role: .responder, transport: name, hint: nil) }
        }
    }

    // MARK: Dialling

    private func hasSession(to peer: PeerID, on transport: String) -> Bool {
        sessionsByPeer[peer, default: []].contains { sessions[$0]?.transport == transport }
    }

    private func ensureDialing(_ key: HintKey) {
        guard !dialing.contains(key) else { return }
        dialing.insert(key)
        spawn { await self.dialLoop(key) }
    }

    /// Keeps one link to a hint: dials with exponential backoff and jitter, serves the
    /// link, redials when it drops; ends when the hint is lost or the router stops.
    private func dialLoop(_ key: HintKey) async {
        defer { dialing.remove(key) }
        var attempt = 0
        if let known = hints[key]?.peerID, localPeerID > known {
            // Both ends discovered each other: let the lower peer ID dial first, so
            // that usually one link, not two, comes up.
            if !(await sleep(configuration.reconnect.jitteredDelay(attempt: 1))) { return }
        }
        while runState == .running, let hint = hints[key] {
            let known = hint.peerID ?? hintPeers[key]
            if let known, hasSession(to: known, on: key.transport) {
                // Someone (maybe the remote) already connected us; check again later.
                if !(await sleep(configuration.reconnect.initialDelay)) { return }
                attempt = 0
                continue
            }
            guard let transport = transports[key.transport]?.transport else { return }
            do {
                let link = try await transport.dial(hint)
                guard runState == .running else {
                    await link.close()
                    return
                }
                let linkID = LinkID.next()
                pendingLinks[linkID] = link
                let peer = await serve(link: link, id: linkID, role: .initiator, transport: key.transport, hint: hint)
                if let peer {
                    hintPeers[key] = peer
                    attempt = 0
                } else {
                    attempt += 1
                }
            } catch {
                logger.debug("dial \(hint) failed: \(error)")
                attempt += 1
            }
            if !(await sleep(configuration.reconnect.jitteredDelay(attempt: max(0, attempt - 1)))) { return }
        }
    }

    private func sleep(_ duration: Duration) async -> Bool {
        do {
            try await Task.sleep(for: duration)
            return runState == .running
        } catch {
            return false
        }
    }

    // MARK: Links

    /// Runs the handshake on a link, registers it and serves it until it ends.
    /// - Returns: the remote's peer ID when the handshake succeeded.
    @discardableResult
    private func serve(link: any Link, id: LinkID, role: HandshakeRole, transport name: String, hint: PeerHint?) async -> PeerID? {
        defer { pendingLinks[id] = nil }
        guard let entry = transports[name] else {
            await link.close()
            return nil
        }
        let context = HandshakeContext(transportName: name, remoteAddress: link.remoteAddress, expectedPeer: hint?.peerID)
        let secure: SecureSession
        do {
            secure = try await handshake(link: link, role: role, context: context)
            if secure.remotePeerID == localPeerID {
                throw MeshError(.handshakeFailed, "the remote is this node itself")
            }
        } catch {
            counters.handshakeFailures += 1
            let meshError = error as? MeshError
            let code = (meshError?.cause as? MeshError)?.code.name ?? meshError?.code.name ?? "other"
            counters.handshakeFailuresByReason[code, default: 0] += 1
            let reason = meshError?.message ?? "\(error)"
            logger.info("handshake over \(name) with \(link.remoteAddress) failed: \(reason)")
            emit(.handshakeFailed(transport: name, address: link.remoteAddress, reason: reason))
            await link.close()
            return nil
        }
        guard runState == .running else {
            await link.close()
            return nil
        }
        let session = LinkSession(
            link: link, id: id, transport: name, priority: entry.priority, capabilities: entry.transport.capabilities,
            remote: secure.remotePeerID, role: role, cipher: secure.cipher, configuration: configuration,
            logger: logger)
        guard await register(session) else { return secure.remotePeerID }
        let reason = await session.run(
            deliver: { frame, session in await self.accept(frame, from: session) },
            onMalformed: { error in await self.noteMalformed(error, session: session) })
        unregister(session, reason: reason)
        return secure.remotePeerID
    }

    private func handshake(link: any Link, role: HandshakeRole, context: HandshakeContext) async throws -> SecureSession {
        let security = self.security
        let timeout = configuration.handshakeTimeout
        return try await withThrowingTaskGroup(of: SecureSession?.self) { group in
            group.addTask {
                try await security.handshake(role: role, channel: LinkHandshakeChannel(link: link), context: context)
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let session = first else {
                await link.close()
                throw MeshError(.handshakeFailed, "no handshake from \(context.remoteAddress) within \(timeout)")
            }
            return session
        }
    }

    /// Adds a session to the peer table, resolving duplicates: with two links between
    /// the same pair on one transport, the one dialled by the lower peer ID stays.
    private func register(_ session: LinkSession) async -> Bool {
        let peer = session.remote
        if let existingID = sessionsByPeer[peer, default: []].first(where: { sessions[$0]?.transport == session.transport }),
           let existing = sessions[existingID] {
            let keepNew: Bool
            if existing.role == session.role {
                keepNew = true
            } else {
                let localIsLower = localPeerID < peer
                keepNew = (session.role == .initiator) == localIsLower
            }
            counters.duplicateLinksClosed += 1
            let loser = keepNew ? existing : session
            logger.debug("closing duplicate \(loser.transport) link \(loser.id) to \(peer)")
            if !keepNew {
                await session.close(MeshError(.linkClosed, "duplicate link"))
                return false
            }
            await existing.close(MeshError(.linkClosed, "replaced by a newer link"))
        }
        sessions[session.id] = session
        sessionsByPeer[peer, default: []].append(session.id)
        counters.linksOpened += 1
        counters.transports[session.transport, default: .init()].linksOpened += 1
        logger.info("link \(session.id) up to \(peer) over \(session.transport) (\(session.link.remoteAddress))")
        emit(.linkUp(peer: peer, transport: session.transport, link: session.id))
        return true
    }

    private func unregister(_ session: LinkSession, reason: String) {
        guard sessions.removeValue(forKey: session.id) != nil else { return }
        sessionsByPeer[session.remote]?.removeAll { $0 == session.id }
        if sessionsByPeer[session.remote]?.isEmpty == true { sessionsByPeer[session.remote] = nil }
        counters.linksClosed += 1
        lastFailure[session.remote] = "\(session.transport) link down: \(reason)"
        logger.info("link \(session.id) to \(session.remote) over \(session.transport) down: \(reason)")
        emit(.linkDown(peer: session.remote, transport: session.transport, link: session.id, reason: reason))
    }

    private func noteMalformed(_ error: MeshError, session: LinkSession) {
        counters.malformedInputs[error.code.name, default: 0] += 1
        logger.warning("closing \(session.transport) link \(session.id) to \(session.remote): \(error.message)")
        emit(.malformedInput(transport: session.transport, peer: session.remote, reason: error.message))
    }

    // MARK: Receiving

    private func accept(_ frame: DataFrame, from session: LinkSession) async -> LinkSession.AcceptResult {
        guard configuration.relayEnabled else {
            counters.framesRefused += 1
            return .refused
        }
        guard frame.destination == localPeerID else {
            // Multi-hop relaying is not implemented yet: refuse so the sender escalates.
            counters.framesRefused += 1
            return .refused
        }
        if dedup.contains(frame.messageID) {
            counters.duplicatesDropped += 1
            return .duplicate
        }
        counters.transports[session.transport, default: .init()].framesReceived += 1
        counters.transports[session.transport, default: .init()].bytesReceived += frame.payload.count
        let payload: [UInt8]
        if frame.chunkCount == 1 {
            payload = frame.payload
        } else {
            switch assembler.add(frame) {
            case .complete(let bytes): payload = bytes
            case .incomplete: return .accepted
            case .duplicateChunk:
                counters.duplicatesDropped += 1
                return .duplicate
            case .rejected(let reason):
                logger.debug("refusing chunk from \(frame.origin): \(reason)")
                counters.framesRefused += 1
                return .refused
            }
        }
        var opened = payload
        if frame.flags & DataFrame.sealedFlag == 0 {
            // Unsealed messages are trusted only from the link's authenticated remote
            // itself: a peer cannot speak for another origin without an envelope.
            guard frame.origin == session.remote else {
                counters.sealedMessagesRejected["unsealedFromThirdParty", default: 0] += 1
                logger.warning("dropping unsealed message \(frame.messageID) claiming origin \(frame.origin) from \(session.remote)")
                emit(.malformedInput(transport: session.transport, peer: session.remote, reason: "unsealed message claims another origin"))
                dedup.insert(frame.messageID)
                return .accepted
            }
            dedup.insert(frame.messageID)
        } else if let sealer {
            dedup.insert(frame.messageID)
            do {
                opened = try sealer.open(payload, from: frame.origin)
            } catch {
                let code = (error as? MeshError)?.code.name ?? "openFailed"
                counters.sealedMessagesRejected[code, default: 0] += 1
                let reason = (error as? MeshError)?.message ?? "\(error)"
                logger.warning("dropping message \(frame.messageID) from \(frame.origin) over \(session.transport): \(reason)")
                emit(.malformedInput(transport: session.transport, peer: frame.origin, reason: reason))
                // Acknowledge the hop (it arrived), but never deliver it.
                return .accepted
            }
        } else {
            dedup.insert(frame.messageID)
            counters.sealedMessagesRejected["noSealer", default: 0] += 1
            logger.warning("dropping sealed message \(frame.messageID) from \(frame.origin): this router has no sealer to open it")
            return .accepted
        }
        counters.messagesReceived += 1
        emit(.messageReceived(id: frame.messageID, from: frame.origin, transport: session.transport))
        let delivered = await incoming.send(
            InboundMessage(id: frame.messageID, from: frame.origin, payload: opened, transport: session.transport))
        return delivered ? .accepted : .refused
    }

    // MARK: Sending

    /// Sends `payload` to `peer` and returns once the next hop acknowledged it.
    ///
    /// Messages larger than ``Frame/chunkSize`` go as several chunks, in parallel,
    /// each escalating on its own. Each chunk is tried on the best live link first
    /// (by the routing policy) and on the next after an error or ack timeout, up to
    /// the policy's attempt limit.
    /// - Returns: the message's ID.
    /// - Throws: ``MeshError``: `.relayDisabled`, `.messageTooLarge`, `.noRoute` (no
    ///   live link to the peer), `.deliveryFailed` (every attempt failed).
    @discardableResult
    public func send(to peer: PeerID, payload: [UInt8]) async throws -> MessageID {
        guard configuration.relayEnabled else {
            throw MeshError(.relayDisabled, "relaying is switched off, so this node neither sends nor receives (set relay.enabled: true)")
        }
        guard payload.count <= configuration.maxMessageSize else {
            throw MeshError(.messageTooLarge, "message of \(payload.count) bytes exceeds max message size \(configuration.maxMessageSize)")
        }
        let id = MessageID.random()
        guard peer == localPeerID || !candidates(for: peer).isEmpty else {
            throw MeshError(.noRoute, "no live link to peer \(peer); the message was not sent")
        }
        var payload = payload
        var flags: UInt16 = 0
        if let sealer, peer != localPeerID, configuration.sealing == .always {
            // With `.relayedOnly` (the default) a message sent straight to its
            // destination over an authenticated link is protected end to end by the
            // link's Noise session already; the envelope's public-key work is spent
            // only where a relay would carry the message.
            flags |= DataFrame.sealedFlag
            payload = try sealer.seal(payload, to: peer)
            guard payload.count <= configuration.maxMessageSize else {
                throw MeshError(.messageTooLarge, "sealed message of \(payload.count) bytes exceeds max message size \(configuration.maxMessageSize)")
            }
        }
        if peer == localPeerID {
            await incoming.send(InboundMessage(id: id, from: localPeerID, payload: payload, transport: "local"))
            counters.messagesSent += 1
            return id
        }
        let count = DataFrame.chunkCount(messageLength: payload.count)
        func chunk(_ index: Int) -> DataFrame {
            let start = index * Frame.chunkSize
            let end = min(payload.count, start + Frame.chunkSize)
            return DataFrame(
                sequence: 0, messageID: id, origin: localPeerID, destination: peer, ttl: configuration.defaultTTL,
                chunkIndex: UInt16(index), chunkCount: UInt16(count), messageLength: UInt32(payload.count),
                flags: flags, payload: Array(payload[start..<end]))
        }
        if count == 1 {
            try await deliver(chunk(0), to: peer)
        } else {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    let frame = chunk(index)
                    group.addTask { try await self.deliver(frame, to: peer) }
                }
                try await group.waitForAll()
            }
        }
        counters.messagesSent += 1
        return id
    }

    private func candidates(for peer: PeerID) -> [(LinkSession, LinkCandidate)] {
        sessionsByPeer[peer, default: []].compactMap { id in
            guard let session = sessions[id], !session.isClosed else { return nil }
            return (session, session.candidate)
        }
    }

    private func deliver(_ frame: DataFrame, to peer: PeerID) async throws {
        var tried: Set<LinkID> = []
        var lastError: MeshError?
        for _ in 0..<policy.maxAttempts {
            var live = candidates(for: peer)
            if lastError != nil, !live.contains(where: { !tried.contains($0.0.id) }) {
                // Every live link failed this frame (a link dropped, or a duplicate
                // link was closed): give a replacement link a moment to come up.
                await waitForNewLink(to: peer, excluding: tried)
                live = candidates(for: peer)
            }
            guard !live.isEmpty else { break }
            let ranked = policy.rank(live.map(\.1), payloadSize: frame.payload.count)
            guard let choice = ranked.first(where: { !tried.contains($0.linkID) }) ?? ranked.first,
                  let session = sessions[choice.linkID] else { break }
            let timeout = policy.ackTimeout(for: choice, bytes: frame.payload.count + Frame.dataHeaderSize)
            do {
                try await session.sendData(frame, timeout: timeout)
                noteSuccess(peer: peer, session: session, bytes: frame.payload.count)
                return
            } catch {
                let meshError = (error as? MeshError) ?? MeshError(.linkClosed, "\(error)")
                lastError = meshError
                tried.insert(choice.linkID)
                session.recordFailure()
                counters.retries += 1
                if meshError.code == .ackTimeout { counters.ackTimeouts += 1 }
                counters.transports[session.transport, default: .init()].failures += 1
                lastFailure[peer] = "\(session.transport): \(meshError.message)"
            }
        }
        if let lastError {
            throw MeshError(
                .deliveryFailed, "no link to \(peer) acknowledged message \(frame.messageID) (last: \(lastError.message))",
                cause: lastError)
        }
        throw MeshError(.noRoute, "no live link to peer \(peer); the message was not sent")
    }

    private func waitForNewLink(to peer: PeerID, excluding tried: Set<LinkID>) async {
        let deadline = ContinuousClock.now + min(configuration.reconnect.maxDelay, .seconds(2)) + configuration.reconnect.initialDelay
        while ContinuousClock.now < deadline, runState == .running {
            if candidates(for: peer).contains(where: { !tried.contains($0.0.id) }) { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Tracks the transport traffic to a peer uses; a change is an escalation (to a
    /// worse priority) or a de-escalation (back to a better one).
    private func noteSuccess(peer: PeerID, session: LinkSession, bytes: Int) {
        counters.transports[session.transport, default: .init()].framesSent += 1
        counters.transports[session.transport, default: .init()].bytesSent += bytes
        guard sessions[session.id] != nil else { return }
        let previous = activePath[peer]
        activePath[peer] = session.transport
        guard let previous, previous != session.transport else { return }
        let previousPriority = transports[previous]?.priority ?? Int.max
        if session.priority > previousPriority {
            counters.escalations += 1
            counters.transports[previous, default: .init()].escalationsFrom += 1
            let reason = lastFailure[peer] ?? "\(previous) failed"
            logger.notice("traffic to \(peer) escalated \(previous) -> \(session.transport): \(reason)")
            emit(.escalated(peer: peer, from: previous, to: session.transport, reason: reason))
        } else if session.priority < previousPriority {
            counters.deEscalations += 1
            counters.transports[session.transport, default: .init()].deEscalationsTo += 1
            logger.notice("traffic to \(peer) moved back \(previous) -> \(session.transport)")
            emit(.deEscalated(peer: peer, from: previous, to: session.transport))
        }
    }

    // MARK: Observing

    /// A new stream of router events. Each subscriber gets its own stream; a slow one
    /// loses its oldest events (never slows the router).
    public func events() -> AsyncStream<RouterEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: RouterEvent.self, bufferingPolicy: .bufferingNewest(4096))
        let key = nextSubscriber
        nextSubscriber += 1
        subscribers[key] = continuation
        continuation.onTermination = { _ in Task { await self.unsubscribe(key) } }
        if runState == .stopped { continuation.finish() }
        return stream
    }

    private func unsubscribe(_ key: Int) {
        subscribers[key] = nil
    }

    private func emit(_ event: RouterEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    /// The router's counters.
    public func stats() -> RouterStats { counters }

    /// Every peer with a live link, with its links best first.
    public func peers() -> [PeerSnapshot] {
        sessionsByPeer.keys.sorted().map { peer in
            let live = candidates(for: peer)
            let order = policy.rank(live.map(\.1), payloadSize: 0).map(\.linkID)
            let links = order.compactMap { id in live.first { $0.0.id == id }?.0.snapshot }
            return PeerSnapshot(peer: peer, links: links, activeTransport: activePath[peer])
        }
    }

    /// Every configured transport and its state.
    public func transportStatus() -> [TransportStatus] {
        transportOrder.compactMap { transports[$0]?.status }
    }

    /// Asks the router to keep a link to `hint` (as if discovery had reported it).
    public func connect(to hint: PeerHint) {
        handle(.peerDiscovered(hint), transport: hint.transport)
    }
}
