import Logging

/// The outbound half of delivery: seals and queues each message, then (driven by the
/// ``DeliveryScheduler``) chunks and sends it over the best link to its destination,
/// escalating to the next link on error or ack timeout, retrying on a backoff when no
/// link takes it, and records every step in the ``OutboundQueue``. Delivery receipts
/// (``DeliveryReceipt``) are issued and checked here too.
final class DeliveryPipeline: Sendable {
    let localPeerID: PeerID
    let configuration: RouterConfiguration
    let policy: any RoutingPolicy
    let sealer: (any MessageSealer)?
    let receipts: (any ReceiptSigner)?
    let queue: any OutboundQueue
    let sink: any MessageSink
    let table: LinkTable
    let routes: RouteTable
    let relay: RelaySwitch
    /// The relay's budgets (`relay.max_per_hour`, `neighbour_share`, battery floor).
    let relayBudget: RelayBudget
    let paths: PathTracker
    /// The flooding fallback and emergency limits (`flood:`).
    let flood: FloodControl
    let clock: any MeshClock
    let stats: StatsRecorder
    let bus: EventBus
    let logger: Logger
    let scheduler: DeliveryScheduler
    let waiters = StatusWaiters()
    /// Told when a message waits for a route to its destination that this node lacks
    /// (the router asks its neighbours for one, §A.5 "Route requests").
    let routeWanted = PeerCallback()

    init(
        localPeerID: PeerID,
        configuration: RouterConfiguration,
        policy: any RoutingPolicy,
        sealer: (any MessageSealer)?,
        receipts: (any ReceiptSigner)?,
        queue: any OutboundQueue,
        sink: any MessageSink,
        table: LinkTable,
        routes: RouteTable,
        relay: RelaySwitch,
        relayBudget: RelayBudget,
        paths: PathTracker,
        flood: FloodControl,
        clock: any MeshClock,
        stats: StatsRecorder,
        bus: EventBus,
        logger: Logger
    ) {
        self.localPeerID = localPeerID
        self.configuration = configuration
        self.policy = policy
        self.sealer = sealer
        self.receipts = receipts
        self.queue = queue
        self.sink = sink
        self.table = table
        self.routes = routes
        self.relay = relay
        self.relayBudget = relayBudget
        self.paths = paths
        self.flood = flood
        self.clock = clock
        self.stats = stats
        self.bus = bus
        self.logger = logger
        self.scheduler = DeliveryScheduler(retry: configuration.reconnect, clock: clock)
    }

    // MARK: Submitting

    /// Queues a message; returns its ID once the queue kept it. It is sent at once when
    /// a link to `peer` is up, otherwise when one comes up.
    /// - Parameter transmitHere: a message that can go at once is sent in this task
    ///   (its caller waits for its status anyway, with no timeout), not handed to the
    ///   scheduler.
    func submit(
        to peer: PeerID,
        payload: [UInt8],
        options: SendOptions,
        transmitHere: Bool = false
    ) async throws -> MessageID {
        let (id, known) = try await admit(to: peer, bytes: payload.count, options: options)
        if known { return id }
        // The digest a receipt must carry is over the plaintext, so it holds whether
        // the message travels sealed or not (and if it is sealed later, for a relay).
        let digest = receipts?.digest(payload) ?? []
        let payloadBytes = payload.count
        var payload = payload
        var flags: UInt16 = 0
        if options.emergency {
            guard peer != localPeerID else { throw Self.emergencyToSelf }
            if let refusal = flood.admitEmergency(origin: localPeerID, neighbour: nil) {
                stats.update { $0.flood.emergencyRateLimited["ownLimit", default: 0] += 1 }
                throw ownEmergencyLimit(refusal)
            }
            flags |= DataFrame.emergencyFlag | DataFrame.floodFlag
        }
        if let sealer, peer != localPeerID, configuration.sealing == .always {
            flags |= DataFrame.sealedFlag
            payload = try seal(payload, with: sealer, to: peer, binding: SealBinding(messageID: id, flags: flags))
            guard payload.count <= configuration.maxMessageSize else {
                throw MeshError(
                    .messageTooLarge,
                    "sealed message of \(payload.count) bytes exceeds max message size \(configuration.maxMessageSize)"
                )
            }
        } else if let sealer, peer != localPeerID, !hasLink(to: peer) {
            // With `.relayedOnly` (the default) a message sent straight to its
            // destination over an authenticated link is protected end to end by the
            // link's Noise session already; the envelope's public-key work is spent
            // only where a relay may carry the message: when no direct link is up now.
            // When it cannot be sealed (too large once sealed, a peer ID that is no
            // key) it is queued as it is: a direct link may still carry it, and a
            // relay attempt records why it cannot go that way.
            if let sealed = try? seal(
                payload,
                with: sealer,
                to: peer,
                binding: SealBinding(messageID: id, flags: flags)
            ),
                sealed.count <= configuration.maxMessageSize
            {
                flags |= DataFrame.sealedFlag
                payload = sealed
            }
        }
        let message = OutboundMessage(
            id: id,
            destination: peer,
            payload: payload,
            flags: flags,
            contentDigest: digest,
            expiresAfter: options.expiresAfter,
            payloadBytes: flags & DataFrame.sealedFlag != 0 ? payloadBytes : nil
        )
        if peer != localPeerID, !options.emergency, hasRoute(to: peer), !scheduler.drains(peer) {
            // It can go at once, and no older message to the peer waits to go first:
            // queued and claimed in one step, so the queue need not read back what this
            // task holds.
            if let claimed = try await queue.enqueueClaimed(message) {
                announceQueued(id, to: peer)
                await start(claimed, here: transmitHere)
                return id
            }
        } else {
            try await queue.enqueue(message)
        }
        return try await queued(id, to: peer, options: options)
    }

    /// Announces a message just queued and starts its delivery.
    func queued(_ id: MessageID, to peer: PeerID, options: SendOptions) async throws -> MessageID {
        announceQueued(id, to: peer)
        if peer == localPeerID {
            try await deliverLocally(id)
        } else if options.emergency {
            stats.update { $0.flood.emergencySent += 1 }
            scheduler.schedule(.now(id, peer))
        } else {
            scheduler.schedule(.message(id, peer))
        }
        return id
    }

    /// Sends a message claimed as it was queued: from this task when `here`, else from
    /// the scheduler.
    private func start(_ claimed: OutboundMessage, here: Bool) async {
        guard here else { return scheduler.schedule(.claimed(claimed)) }
        // Cut by the caller's cancellation, it is queued again: the scheduler sends it.
        if await !transmitOrRequeue(claimed), Task.isCancelled {
            scheduler.schedule(.message(claimed.id, claimed.destination))
        }
    }

    /// Tells the event stream and the status waiters that `id` is queued.
    private func announceQueued(_ id: MessageID, to peer: PeerID) {
        bus.emit(.message(.messageQueued, id: id, peer: peer))
        waiters.notify(id)
    }

    /// A message to this node itself: straight to the sink.
    private func deliverLocally(_ id: MessageID) async throws {
        guard let message = await queue.claim(id) else { return }
        do {
            try await sink.accept(
                InboundMessage(id: id, from: localPeerID, payload: message.payload, transport: "local")
            )
        } catch {
            await update(message, to: .queued, transport: nil, reason: "this node's inbox refused it: \(error)")
            throw error
        }
        stats.countMessageSent()
        await update(message, to: .delivered, transport: "local", reason: nil)
    }

    /// Whether a link to `peer` is up.
    func hasLink(to peer: PeerID) -> Bool {
        !table.sessions(to: peer).isEmpty
    }

    /// Whether a message for `peer` can go out now: a link to it, or a route through a
    /// neighbour.
    func hasRoute(to peer: PeerID) -> Bool {
        routes.nextHop(for: peer, now: clock.now) != nil
    }

    /// Whether a message with no route may go out by flooding now: flooding is on and
    /// some neighbour is up.
    var mayFlood: Bool {
        configuration.flood.enabled && !table.peers.isEmpty
    }

    /// Claims and sends one queued message (a no-op when someone else has it).
    func send(_ id: MessageID) async {
        guard let message = await queue.claim(id) else { return }
        await transmitOrRequeue(message)
    }

    /// Sends the queued messages for `peer`, oldest first, `window` at a time, until
    /// none is left, no route to it is left, or an attempt fails (a retry is scheduled).
    func drain(to peer: PeerID, window: Int) async {
        if !hasRoute(to: peer) {
            routeWanted(peer)
            await drainFloods(to: peer)
            return
        }
        while hasRoute(to: peer), !Task.isCancelled {
            let ids = await queue.waiting(for: peer)
            guard !ids.isEmpty else { return }
            var failed = false
            for batch in stride(from: 0, to: ids.count, by: window).map({ ids[$0..<min($0 + window, ids.count)] }) {
                let results = await withTaskGroup(of: Bool.self) { group in
                    for id in batch {
                        group.addTask {
                            guard let message = await self.queue.claim(id) else { return true }
                            return await self.transmitOrRequeue(message)
                        }
                    }
                    var all = true
                    for await ok in group where !ok { all = false }
                    return all
                }
                if !results {
                    failed = true
                    break
                }
                if !hasRoute(to: peer) || Task.isCancelled { return }
            }
            if failed { return }
        }
    }

    /// Sends a claimed message; on failure puts it back in the queue and schedules a
    /// retry. Returns whether it was sent.
    @discardableResult
    func transmitOrRequeue(_ message: OutboundMessage) async -> Bool {
        do {
            try await transmit(message)
            scheduler.noteSuccess(to: message.destination)
            return true
        } catch {
            let cancelled = error is CancellationError || Task.isCancelled
            let reason =
                cancelled ? "the router stopped while it was being sent" : (error as? MeshError)?.message ?? "\(error)"
            await update(message, to: .queued, transport: nil, reason: reason)
            if !cancelled {
                stats.update { $0.deliveryRetries += 1 }
                bus.emit(.message(.messageRetrying, id: message.id, peer: message.destination, reason: reason))
                logger.debug("message \(message.id) to \(message.destination) stays queued: \(reason)")
                scheduler.noteFailure(to: message.destination)
            }
            return false
        }
    }

    /// Records a status change and wakes whoever waits for it.
    func update(_ message: OutboundMessage, to status: MessageStatus, transport: String?, reason: String?) async {
        await queue.update(message.id, to: status, transport: transport, reason: reason)
        waiters.notify(message.id)
    }

    /// Sends every chunk of a claimed message to the next hop (the destination when a
    /// link to it is up, else the route's neighbour) and records the outcome.
    private func transmit(_ message: OutboundMessage) async throws {
        var message = message
        let peer = message.destination
        let nextHop = routes.nextHop(for: peer, now: clock.now)
        // A flood asks for a route in transmitFlood, and only where it keeps custody: a
        // copy re-broadcast without custody leaves this node, and asking would cost a
        // request in every node the flood crosses (docs/PROTOCOL.md §A.5, "Route
        // requests", *Asking*).
        let step = await floodStep(for: message, hop: nextHop)
        if nextHop == nil, step == nil { routeWanted(peer) }
        if let step {
            try await transmitFlood(message, step)
            return
        }
        guard let hop = nextHop else {
            throw MeshError(.noRoute, "no link and no announced route to \(peer); the message waits for one")
        }
        if hop != peer, message.flags & DataFrame.sealedFlag == 0 {
            message = try await sealForRelay(message)
        }
        // A flood copy from a neighbour, sent on by route (§A.9): the next hop may hold
        // it as a flood copy already and acknowledge it as a duplicate, so it may only
        // go as a flood copy while it carries no hop's custody here.
        var floodCopy =
            message.isRelayed && message.flags & DataFrame.floodFlag != 0
            && message.flags & DataFrame.floodStartedLocalFlag == 0
        if floodCopy, let custody = flood.takeCustody(message.id) {
            message = try await keepFloodCopy(message, custodyTTL: custody)
            floodCopy = false
        }
        if message.flags & DataFrame.floodStartedLocalFlag != 0 {
            // The copy a flood's starter kept goes by route as an ordinary message: a
            // relay that let its own flood copy go takes it into custody again (§A.9).
            message.flags &= ~(DataFrame.floodFlag | DataFrame.floodThroughFlag)
        }
        let transport = try await transmitChunks(of: message, via: hop)
        if floodCopy, case .custody(let custody) = flood.beginRelease(message.id) {
            // Custody came with an ordinary copy while the next hop took this flood copy
            // (perhaps as a duplicate of a copy it let go): sent again, as an ordinary one.
            _ = try await keepFloodCopy(message, custodyTTL: custody)
            throw MeshError(
                .deliveryFailed,
                "a hop's custody of flood copy \(message.id.hex) came while it was sent on as a flood copy; it goes again as an ordinary message"
            )
        }
        defer { if floodCopy { flood.endRelease(message.id) } }
        if message.isRelayed {
            stats.update {
                $0.messagesRelayed += 1
                $0.bytesRelayed += message.payload.count
            }
            await update(message, to: .relayed, transport: transport, reason: "handed to \(hop)")
            bus.emit(
                .message(.messageRelayed, id: message.id, peer: peer, transport: transport, reason: "handed to \(hop)")
            )
            return
        }
        if message.isReceipt {
            // A receipt needs no receipt: the hop that took it is its delivery.
            stats.update { $0.receiptsSent += 1 }
            await update(message, to: .delivered, transport: transport, reason: nil)
            return
        }
        stats.countMessageSent()
        bus.emit(.message(.messageSent, id: message.id, peer: peer, transport: transport))
        if hop == peer && (receipts == nil || !table.sessions(to: peer).contains { $0.shared.contains(.receipts) }) {
            // No receipts (here, or the destination did not announce them): the next hop
            // is the destination itself, and its hop acknowledgement means its sink took
            // custody, so the message is delivered.
            await update(message, to: .delivered, transport: transport, reason: nil)
            bus.emit(.message(.messageDelivered, id: message.id, peer: peer, transport: transport))
        } else {
            // The destination's signed receipt will make it delivered.
            await update(message, to: .sent, transport: transport, reason: nil)
        }
    }

    /// Marks a flood copy that carries a hop's custody as one this node floods no more:
    /// from now on it goes by route as an ordinary message, kept until handed on (§A.9).
    /// `custodyTTL` is the TTL that custody came with (``custodyTTL(_:of:)``).
    private func keepFloodCopy(_ message: OutboundMessage, custodyTTL custody: UInt8) async throws -> OutboundMessage {
        var kept = message
        kept.flags |= DataFrame.floodStartedLocalFlag
        kept.ttl = Self.custodyTTL(custody, of: message)
        try await queue.replacePayload(message.id, with: message.payload, flags: kept.flags, ttl: kept.ttl)
        return kept
    }

    /// The TTL a relayed flood copy goes on with by route once it carries a hop's
    /// custody: what that custody came with (`custody`, the ordinary copy's TTL − 1),
    /// where that is more than the flood left it (docs/PROTOCOL.md §A.9). A flood's TTL
    /// counts flood hops; sent on as an ordinary copy with what is left of it, the copy
    /// could run out of TTL on its route, and every next hop would refuse it for ever.
    static func custodyTTL(_ custody: UInt8, of message: OutboundMessage) -> UInt8 {
        max(custody, message.ttl ?? 0)
    }
}
