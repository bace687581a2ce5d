import Logging
import ServiceLifecycle

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
/// The router is a thin front over three parts: the link manager (`Links/`:
/// transports, dialling, handshakes, the link table), the delivery pipeline
/// (`Delivery/`: outbound queue, chunking, sealing, escalation; inbound dedup,
/// reassembly, the message sink) and the routing policy (`Routing/`).
///
/// ``send(to:payload:options:)`` queues a message and returns its ID; it goes out
/// when a link or a route to its destination is up (store and forward: relays take
/// custody of it on the way, ``routes()`` shows the route table), and
/// ``waitForStatus(of:until:timeout:)`` follows it to `sent` and `delivered`. Inbound
/// messages go to the ``MessageSink`` given at init, by default ``incoming``.
public final class Router: Service, Sendable {
    /// This node's peer ID.
    public let localPeerID: PeerID
    /// The optional protocol features this node speaks and announces (`features:`,
    /// with their dependencies applied).
    public let features: Capabilities
    /// Messages for this node, in arrival order, when the router was made without a
    /// sink of its own (otherwise it stays empty). One consumer; when it falls behind,
    /// links are slowed down rather than messages dropped.
    public let incoming: BoundedChannel<InboundMessage>

    let links: LinkManager
    let delivery: DeliveryPipeline
    let announcer: Announcer
    let routeTable: RouteTable
    let relay: RelaySwitch
    /// Topic publish/subscribe (`Topics/`, used by `Router+Topics.swift`).
    let gossip: GossipRouter
    let table: LinkTable
    let paths: PathTracker
    let policy: any RoutingPolicy
    let bus = EventBus()
    let counters = StatsRecorder()
    let clock: any MeshClock

    /// Creates a router.
    /// - Parameters:
    ///   - security: runs the handshake on every link (``PlaintextLinkSecurity`` or
    ///     MeshCrypto's Noise XX).
    ///   - configuration: timeouts, limits and the relay switch.
    ///   - policy: the routing policy; defaults to ``PriorityEscalationPolicy`` built
    ///     from `configuration.escalation`.
    ///   - sealer: seals payloads end to end (MeshCrypto's `EnvelopeSealer`); nil
    ///     sends payloads protected by the link encryption only.
    ///   - receipts: signs the receipts this node returns and checks the ones it gets
    ///     (MeshCrypto's `IdentityReceiptSigner`); nil means no receipts, and the
    ///     destination's hop acknowledgement counts as delivery.
    ///   - sink: takes custody of every message for this node; nil sends them to
    ///     ``incoming``.
    ///   - queue: keeps outbound messages and their status; defaults to an
    ///     ``InMemoryOutboundQueue``.
    ///   - clock: the clock for every timeout; tests pass one they advance.
    ///   - battery: reads the battery for `relay.battery_floor_percent`; nil = mains.
    ///   - topics: the topic gossip's settings, with the default subscriptions.
    ///   - topicStore: keeps subscriptions and seen topic message IDs across restarts;
    ///     nil keeps them in memory.
    ///   - topicAdmission: decides whether a topic message is forwarded; nil spends
    ///     the relay budget (`relay.max_per_hour`, the neighbour's share, the battery
    ///     floor) as for relayed messages.
    ///   - floodSeen: the flood duplicate cache (docs/PROTOCOL.md §A.9); nil keeps it in
    ///     memory (the node passes its store's, which survives restarts).
    ///   - announceState: keeps the sequences of this node's own route announcements
    ///     across restarts, so that a restart does not cost a new sequence crossing the
    ///     whole mesh (docs/PROTOCOL.md §A.5, "Restarting"); nil keeps nothing (a
    ///     restarted node announces a new sequence, newer by ``RoutingConfiguration/firstSequence``).
    ///   - savedRoutes: keeps the route table across restarts (saved every 5 minutes and
    ///     at the stop), so that a restarted node starts with the routes it had, dormant
    ///     until their neighbours link again, instead of every neighbour sending it every
    ///     route it knows; nil keeps nothing.
    ///   - random: draws the flood re-broadcast delays; nil for the system's generator.
    ///   - logger: where the router logs.
    public init(
        security: any LinkSecurity,
        configuration: RouterConfiguration = .init(),
        policy: (any RoutingPolicy)? = nil,
        sealer: (any MessageSealer)? = nil,
        receipts: (any ReceiptSigner)? = nil,
        sink: (any MessageSink)? = nil,
        queue: (any OutboundQueue)? = nil,
        clock: any MeshClock = SystemClock(),
        battery: (any BatteryGauge)? = nil,
        topics: TopicConfiguration = .init(),
        topicStore: (any TopicStore)? = nil,
        topicAdmission: (any TopicRelayAdmission)? = nil,
        floodSeen: (any FloodSeenStore)? = nil,
        announceState: (any AnnounceStateStore)? = nil,
        savedRoutes: (any RouteTableStore)? = nil,
        random: (any MeshRandom)? = nil,
        logger: Logger
    ) {
        localPeerID = security.localPeerID
        var configuration = configuration
        configuration.features = configuration.features.consistent
        features = configuration.features
        // A feature switched off is off here too, not only on the wire.
        if !configuration.features.contains(.flooding) { configuration.flood.enabled = false }
        // Receipts off: none issued or checked (the signer still signs announcements).
        let deliveryReceipts = configuration.features.contains(.receipts) ? receipts : nil
        incoming = BoundedChannel(capacity: configuration.inboxCapacity)
        let policy = policy ?? PriorityEscalationPolicy(configuration: configuration.escalation)
        let sink = sink ?? ChannelSink(channel: incoming)
        self.policy = policy
        let table = LinkTable(localPeerID: localPeerID)
        self.table = table
        let relay = RelaySwitch(configuration.relayEnabled)
        self.relay = relay
        let routeTable = RouteTable(localPeerID: localPeerID, links: table, routing: configuration.routing)
        self.routeTable = routeTable
        paths = PathTracker(stats: counters, bus: bus, logger: logger)
        // Every line a remote party can trigger goes through one limiter: the log
        // cannot grow faster than a fixed bound, whatever strangers send.
        let remoteLog = LogLimiter(logger: logger, clock: clock)
        let delivery = DeliveryPipeline(
            localPeerID: localPeerID,
            configuration: configuration,
            policy: policy,
            sealer: sealer,
            receipts: deliveryReceipts,
            queue: queue ?? InMemoryOutboundQueue(clock: clock),
            sink: sink,
            table: table,
            routes: routeTable,
            relay: relay,
            relayBudget: RelayBudget(limits: configuration.relayLimits, clock: clock, gauge: battery),
            paths: paths,
            flood: FloodControl(
                configuration: configuration.flood,
                seen: floodSeen ?? InMemoryFloodSeenStore(capacity: configuration.dedupCapacity),
                random: random ?? SystemMeshRandom(),
                clock: clock
            ),
            clock: clock,
            stats: counters,
            bus: bus,
            logger: logger
        )
        let announcer = Announcer(
            localPeerID: localPeerID,
            configuration: configuration.routing,
            signer: receipts,
            routes: routeTable,
            links: table,
            relay: relay,
            clock: clock,
            stats: counters,
            bus: bus,
            logger: logger,
            stateStore: announceState,
            tableStore: savedRoutes
        )
        self.announcer = announcer
        let inbound = InboundPipeline(
            localPeerID: localPeerID,
            configuration: configuration,
            sealer: sealer,
            sink: sink,
            delivery: delivery,
            clock: clock,
            stats: counters,
            bus: bus,
            logger: logger,
            remoteLog: remoteLog
        )
        let gossip = GossipRouter(
            localPeerID: localPeerID,
            configuration: topics,
            signer: receipts,
            store: topicStore ?? InMemoryTopicStore(),
            admission: topicAdmission ?? BudgetedTopicAdmission(budget: delivery.relayBudget, stats: counters),
            emergencies: configuration.features.contains(.emergency) ? delivery.flood : nil,
            sink: sink,
            links: table,
            relay: relay,
            clock: clock,
            stats: counters,
            bus: bus,
            logger: logger,
            remoteLog: remoteLog
        )
        self.gossip = gossip
        links = LinkManager(
            security: security,
            configuration: configuration,
            clock: clock,
            table: table,
            inbound: inbound,
            announcer: announcer,
            gossip: gossip,
            bus: bus,
            stats: counters,
            logger: logger,
            remoteLog: remoteLog
        )
        self.delivery = delivery
        self.clock = clock
    }

    /// Adds a transport with its priority (lower = preferred). Transports added while
    /// the router runs start at once.
    public func add(_ transport: any Transport, priority: Int) async {
        await links.add(transport, priority: priority)
    }

    // MARK: Lifecycle

    /// Runs every transport and serves links until ``shutdown()``, graceful shutdown
    /// of the service group, or cancellation.
    public func run() async throws {
        let delivery = self.delivery
        let announcer = self.announcer
        let gossip = self.gossip
        await gossip.load()
        await announcer.resume()
        await announcer.restoreTable()
        await links.onLinkUp { peer in
            delivery.scheduler.schedule(.drain(peer))
            // Floods that found no neighbour go out now that there is one.
            for (id, destination) in delivery.flood.takeWaiting() { delivery.scheduler.schedule(.now(id, destination)) }
            announcer.linkUp(peer)
            gossip.linkUp(peer)
        }
        // A route that appears (or moves to another neighbour) drains what waits for
        // its destination, the way a link coming up does.
        announcer.onRouteLearned { destination in delivery.scheduler.schedule(.drain(destination)) }
        // A message that waits for a route it lacks makes the node ask for one.
        delivery.routeWanted.set { destination in announcer.requestRoute(to: destination) }
        announcer.stillWaiting.set { destination in await delivery.queue.holdsUnsent(for: destination) }
        defer {
            incoming.finish()
            bus.finish()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await delivery.scheduler.run(delivery) }
            group.addTask { await announcer.run() }
            group.addTask { await announcer.runRequests() }
            group.addTask { await announcer.runSummaries() }
            group.addTask { await announcer.runStateSaves() }
            group.addTask { await announcer.runTableSaves() }
            group.addTask { await gossip.run() }
            try await links.run()
            delivery.scheduler.finish()
            group.cancelAll()
            try await group.waitForAll()
        }
        await announcer.saveTableAtStop()
    }

    /// Closes every link, stops every transport and makes ``run()`` return.
    public func shutdown() async {
        await links.shutdown()
    }

    // MARK: Sending

    /// Queues `payload` for `peer` and returns the message's ID once the
    /// ``OutboundQueue`` kept it (durably, for a persistent queue). It is not lost if
    /// no route exists now: it goes out as soon as a link to `peer` comes up or a
    /// route to it is learned (through neighbours that relay it, sealed end to end),
    /// with retries on a backoff, until it expires. Follow it with ``status(of:)``,
    /// ``waitForStatus(of:until:timeout:)`` or ``events()``.
    ///
    /// Messages larger than `Frame.chunkSize` go as several chunks, in parallel,
    /// each escalating on its own: tried on the best live link first (by the routing
    /// policy) and on the next after an error or ack timeout. With a ``ReceiptSigner``
    /// the message becomes ``MessageStatus/sent`` when the next hop took it and
    /// ``MessageStatus/delivered`` when the destination's signed receipt arrives;
    /// without one, the destination's hop acknowledgement makes it delivered.
    /// - Parameters:
    ///   - peer: the destination.
    ///   - payload: the message's bytes.
    ///   - options: a message ID of the caller's (a retry with the same ID never makes
    ///     a duplicate) and the expiry.
    /// - Returns: the message's ID.
    /// - Throws: ``MeshError``: `.relayDisabled`, `.messageTooLarge`, `.invalidArgument`
    ///   (the ID is in use for another peer), or the queue's error (e.g. full).
    @discardableResult
    public func send(to peer: PeerID, payload: [UInt8], options: SendOptions = .init()) async throws -> MessageID {
        try checkFeatures(options)
        return try await delivery.submit(to: peer, payload: payload, options: options)
    }

    /// Queues a payload that is already stored durably (hashed with
    /// ``makeContentDigester()`` while it was written) like ``send(to:payload:options:)``,
    /// without copying or hashing the bytes again when the queue can adopt it.
    /// Ownership of `stored` passes to the router: the queue keeps it, or it is
    /// discarded when the send fails.
    /// - Throws: what ``send(to:payload:options:)`` throws, or when the payload must be
    ///   read back (to seal it, for a queue that keeps its own copy) and cannot be.
    @discardableResult
    public func send(
        to peer: PeerID,
        stored: any StoredPayload,
        options: SendOptions = .init()
    ) async throws -> MessageID {
        try checkFeatures(options)
        return try await delivery.submit(to: peer, stored: stored, options: options)
    }

    /// Throws now what ``send(to:stored:options:)`` would throw for a payload of `bytes`
    /// bytes before it is read or stored: relaying switched off, a payload above the
    /// maximum message size, an emergency beyond this node's hourly limit, a message ID
    /// queued for another peer, or no room in the outbox. For a caller about to read a
    /// large upload; the send itself checks again (the outbox may fill meanwhile).
    public func checkSend(to peer: PeerID, bytes: Int, options: SendOptions = .init()) async throws {
        try checkFeatures(options)
        try await delivery.check(to: peer, bytes: bytes, options: options)
    }

    /// Refuses an emergency send while `features.emergency` is off.
    private func checkFeatures(_ options: SendOptions) throws {
        if options.emergency && !features.contains(.emergency) {
            throw MeshError(
                .invalidArgument,
                "emergency messages are switched off on this node (features.emergency, or features.flooding, is false); send it without the emergency flag, or switch the feature on"
            )
        }
    }

    /// A digester for the content digest ``send(to:stored:options:)`` expects, from
    /// the router's ``ReceiptSigner``; nil when there is none (or it hashes only whole
    /// payloads), and then a stored payload carries no digest.
    public func makeContentDigester() -> (any ContentDigester)? {
        delivery.receipts?.makeDigester()
    }

    /// Queues `payload` for `peer` like ``send(to:payload:options:)`` and waits until
    /// the message reaches `target` (``MessageStatus/sent`` or
    /// ``MessageStatus/delivered``).
    /// - Returns: the message's ID.
    /// - Throws: what ``send(to:payload:options:)`` throws; `.deliveryFailed` when the
    ///   message failed or expired instead (the record's reason says why); `.timedOut`
    ///   (the message stays queued) or `CancellationError` when the wait ends first.
    @discardableResult
    public func send(
        to peer: PeerID,
        payload: [UInt8],
        options: SendOptions = .init(),
        waitUntil target: MessageStatus,
        timeout: Duration? = nil
    ) async throws -> MessageID {
        try checkFeatures(options)
        // Without a timeout the caller waits as long as it takes anyway: a message that
        // can go at once goes from this task, without the scheduler's hop.
        let id = try await delivery.submit(
            to: peer,
            payload: payload,
            options: options,
            transmitHere: timeout == nil
        )
        let record = try await waitForStatus(of: id, until: target, timeout: timeout)
        if record.status == .failed || record.status == .expired {
            throw MeshError(
                .deliveryFailed,
                "message \(id.hex) to \(peer) \(record.status): \(record.reason ?? "no reason recorded")"
            )
        }
        return id
    }
}
