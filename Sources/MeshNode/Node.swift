import Foundation
import Logging
import MeshCore
import MeshStore
import ServiceLifecycle
import UnixSignals

/// Builds a node from a configuration: loads (or creates) the identity in
/// `dataDirectory` (unless `identity` is given), opens the store (`store.path`, by
/// default `DATA-DIR/store.sqlite`: the persisted inbox, outbox, history, contacts and
/// address ledger), applies the settings saved at run time (``SavedDiscoveryMode``,
/// ``SavedSettings``), makes every
/// enabled transport through the registry, and wires the router, the store and the
/// control socket. Nothing starts until ``Node/run()``. `eventCapacity` events are held
/// for resuming the event stream (`scmesh events`, `GET /api/v1/events`).
///
/// ```swift
/// let config = try NodeConfiguration.load(file: nil)
/// let node = try buildNode(config: config, dataDirectory: dir, logger: logger)
/// try await node.run()   // until SIGINT/SIGTERM
/// ```
/// - Throws: ``MeshError`` when the data directory, identity or store is unusable, a
///   transport's factory fails, or the config enables a transport the registry lacks.
public func buildNode(
    config: NodeConfiguration,
    dataDirectory: String,
    logger: Logger = Logger(label: "scmesh"),
    registry: TransportRegistry = .current,
    identity: LocalIdentity? = nil,
    eventCapacity: Int = 4096
) throws -> Node {
    // Before any file is created in it: a path too long for the control socket is
    // refused, and a directory open to others is closed first.
    try DataDirectory.requireSocketPathFits(dataDirectory)
    try DataDirectory.prepare(dataDirectory, logger: logger)
    let identity = try identity ?? LocalIdentity.loadOrCreate(dataDirectory: dataDirectory)
    // Settings changed at run time (discovery mode, relay switch and budgets) outlive a restart.
    let saved = try SavedSettings.load(dataDirectory: dataDirectory)
    let configured = config
    let config = saved.applied(to: try SavedDiscoveryMode.applied(to: config, dataDirectory: dataDirectory))
    let maker = TransportMaker(
        configuration: configured,
        registry: registry,
        identity: identity,
        dataDirectory: dataDirectory,
        logger: logger
    )
    var transports: [(transport: any Transport, priority: Int)] = []
    for (name, settings) in config.enabledTransports {
        transports.append((try maker.make(name), settings.priority))
    }
    let store = try MeshStore(
        path: config.store.filePath(dataDirectory: dataDirectory),
        configuration: config.store.storeConfiguration,
        logger: logger
    )
    return Node(
        configuration: config,
        dataDirectory: dataDirectory,
        identity: identity,
        store: store,
        transports: transports,
        events: EventLog(capacity: eventCapacity),
        logger: logger,
        maker: maker,
        configured: configured,
        disabledTransports: Set(saved.disabledTransports ?? [])
    )
}

/// A running SCMesh node: the router with its transports, the store (inbox, outbox,
/// history, contacts, address ledger) and the control socket, run as services of one
/// `ServiceGroup`. Make one with ``buildNode(config:dataDirectory:logger:registry:identity:)``.
///
/// Inbound messages pass the ``ContactFilter`` (blocked contacts and, in allow-list
/// mode, non-contacts are dropped) on their way to the inbox; the
/// ``AddressLedgerService`` records which addresses worked and redials known peers at
/// start.
public final class Node: Sendable {
    /// The configuration it was built from.
    public let configuration: NodeConfiguration
    /// Its data directory.
    public let dataDirectory: String
    /// Its identity.
    public let identity: LocalIdentity
    /// The router.
    public let router: Router
    /// The node's SQLite store: inbox, outbox, history, contacts, address ledger.
    public let store: MeshStore
    /// Messages received for this node, persisted (the router's message sink).
    public var inbox: StoreInbox { store.inbox }
    /// The control socket server.
    public let controlServer: ControlServer
    /// The typed command layer the control socket and the HTTP API share.
    package let commands: ControlHandler
    /// Where the HTTP API listens, once it does.
    package let httpEndpoint = HTTPEndpoint()
    /// The inbound filter in front of the inbox (blocked contacts, allow-list mode).
    public let contactFilter: ContactFilter
    /// Keeps the address ledger and redials known peers at start.
    public let ledgerService: AddressLedgerService
    /// Reads the power state and applies its profile (`power:`).
    public let powerMonitor: PowerMonitor
    /// The router's recent events, numbered (`scmesh events`, the HTTP event stream).
    package let events: EventLog
    /// The transports the node runs, with their priorities.
    public let transports: [(transport: any Transport, priority: Int)]
    /// The transports as the router gets them: wrapped to report failed dials to the
    /// address ledger.
    private let routedTransports: [(transport: any Transport, priority: Int)]
    /// The transports switched off at run time before this start (``SavedSettings``).
    private let disabledTransports: Set<String>
    private let logger: Logger

    /// Milliseconds since 1970 shifted left by 20 bits: room for a million
    /// announcements per millisecond before a restart could repeat a sequence.
    static func firstAnnounceSequence(now: Date) -> UInt64 {
        UInt64(max(0, now.timeIntervalSince1970 * 1000)) << 20
    }

    init(
        configuration: NodeConfiguration,
        dataDirectory: String,
        identity: LocalIdentity,
        store: MeshStore,
        transports: [(transport: any Transport, priority: Int)],
        events: EventLog,
        logger: Logger,
        maker: TransportMaker,
        configured: NodeConfiguration,
        disabledTransports: Set<String>
    ) {
        self.configuration = configuration
        self.events = events
        self.dataDirectory = dataDirectory
        self.identity = identity
        self.store = store
        self.transports = transports
        self.logger = logger
        var routerConfiguration = configuration.routerConfiguration
        // Announcement sequences start from the wall clock: a restarted node's routes
        // are newer than those it announced before (docs/PROTOCOL.md §A.5).
        routerConfiguration.routing.firstSequence = Self.firstAnnounceSequence(now: Date())
        contactFilter = ContactFilter(
            inbox: store.inbox,
            contacts: store.contacts,
            notifier: Notifier(settings: configuration.notify, logger: logger),
            acceptances: InvitationAcceptance(
                invitations: store.invitations,
                contacts: store.contacts,
                events: events,
                logger: logger
            ),
            readReceipts: ReadReceipts(history: store.history, events: events, logger: logger)
        )
        router = Router(
            security: identity.security,
            configuration: routerConfiguration,
            sealer: identity.sealer,
            receipts: identity.receipts,
            sink: contactFilter,
            queue: store.outbox,
            clock: NodeClock(),
            battery: PowerSupplyGauge(directory: configuration.power.supplyPath),
            topics: configuration.topics.topicConfiguration,
            topicStore: store.topics,
            floodSeen: store.floodSeen,
            announceState: store.announceState,
            savedRoutes: store.routeTable,
            logger: logger
        )
        router.setAnnouncedName(configuration.announcedName)
        let reports = AddressLedgerService.Reports()
        self.routedTransports = transports.map {
            (transport: LedgerTransport(inner: $0.transport, reports: reports) as any Transport, priority: $0.priority)
        }
        self.disabledTransports = disabledTransports
        let transportControl = TransportControl(
            router: router,
            maker: maker,
            reports: reports,
            transports: transports.map(\.transport)
        )
        ledgerService = AddressLedgerService(
            router: router,
            ledger: store.ledger,
            redialTransports: Set(transports.map(\.transport).filter { !$0.capabilities.needsDiscovery }.map(\.name)),
            reports: reports,
            logger: logger
        )
        powerMonitor = PowerMonitor(
            settings: configuration.power,
            router: router,
            clock: NodeClock(),
            logger: logger,
            dataDirectory: dataDirectory,
            events: events
        )
        let handler = ControlHandler(
            router: router,
            store: store,
            contactFilter: contactFilter,
            configuration: configuration,
            dataDirectory: dataDirectory,
            startedAt: .now,
            transports: transports.map(\.transport),
            controlCounters: ControlServer.Counters(),
            httpEndpoint: httpEndpoint,
            inviter: identity.signingIdentity,
            powerMonitor: powerMonitor,
            events: events,
            transportControl: transportControl,
            configured: configured
        )
        commands = handler
        controlServer = ControlServer(
            dataDirectory: dataDirectory,
            handler: handler,
            limits: ControlServer.Limits(configuration),
            counters: handler.controlCounters,
            logger: logger
        )
    }

    /// The node's services in start order (graceful shutdown runs in reverse: the
    /// control socket closes first, then the address ledger's upkeep, then the router
    /// stops its transports, then the store's upkeep).
    public var services: [any Service] {
        [
            StoreMaintenance(
                store: store,
                interval: .seconds(configuration.store.maintenanceIntervalSeconds),
                logger: logger
            ),
            RouterService(router: router, transports: routedTransports, disabled: disabledTransports), ledgerService,
            powerMonitor, controlServer,
        ]
    }

    /// The node's peer ID.
    public var peerID: PeerID { identity.peerID }

    /// Runs the node until SIGINT, SIGTERM or SIGHUP (graceful shutdown) or until the
    /// task is cancelled, holding the data directory's ``DataDirectoryLock``.
    /// - Throws: `.nodeAlreadyRunning` when another node uses the data directory, or
    ///   what a service throws.
    /// - Parameter handlingSignals: false leaves SIGINT/SIGTERM/SIGHUP alone (the node then
    ///   stops on cancellation or its caller's graceful shutdown), for nodes in tests.
    /// - Parameter extraServices: more services to run after the node's own (the HTTP
    ///   API); they stop first.
    public func run(handlingSignals: Bool = true, extraServices: [any Service] = []) async throws {
        let lock = try DataDirectoryLock.acquire(dataDirectory: dataDirectory)
        defer { withExtendedLifetime(lock) {} }
        try await controlServer.bind()
        let names = transports.map { "\($0.transport.name)(\($0.priority))" }.joined(separator: ", ")
        logger.info(
            "node \(peerID.hex) starting",
            metadata: [
                "data_dir": "\(dataDirectory)", "control_socket": "\(controlServer.socketPath)",
                "transports": "\(names.isEmpty ? "none" : names)", "relay": "\(configuration.relay.enabled)",
            ]
        )
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: (services + extraServices).map {
                    ServiceGroupConfiguration.ServiceConfiguration(service: $0)
                },
                gracefulShutdownSignals: handlingSignals ? [.sigterm, .sigint, .sighup] : [],
                logger: logger
            )
        )
        defer { try? store.close() }
        // Subscribed before the router starts, so the log has every event from the first.
        let stream = await router.events()
        let recording = Task { [events] in await events.record(stream) }
        defer { recording.cancel() }
        try await group.run()
        logger.info("node \(peerID.short) stopped")
    }
}

/// Adds the transports and runs the router (which hands inbound messages to the
/// inbox, its sink) until it stops.
struct RouterService: Service {
    let router: Router
    let transports: [(transport: any Transport, priority: Int)]
    /// Transports added switched off (disabled at run time before this start).
    var disabled: Set<String> = []

    func run() async throws {
        for (transport, priority) in transports {
            if disabled.contains(transport.name) {
                await router.addDisabled(transport, priority: priority)
            } else {
                await router.add(transport, priority: priority)
            }
        }
        try await router.run()
    }
}
