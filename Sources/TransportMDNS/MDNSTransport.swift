import Logging
import MeshCore
import Synchronization
import TransportTCP

/// The local-network transport: finds peers with mDNS/DNS-SD through the system's
/// avahi-daemon (service `_scmesh._tcp`) and carries frames over TCP links to the
/// resolved addresses — the Linux analogue of the seed app's Multipeer transport.
///
/// It owns an inner ``TCPTransport`` (named `"mdns"`, so its links and hints say so):
/// the inner listener's port is what gets published, inbound TCP links are reported as
/// this transport's `.inboundLink`, and ``dial(_:)`` dials the resolved address.
/// Discovery reports `.peerDiscovered` with a ``PeerHint`` whose `address` is
/// `"ip:port"` (or `"[fe80::1%eth0]:port"` for IPv6 link-local), whose `peerID` comes
/// from the TXT record when the remote published one, and whose `metadata` is the TXT
/// record; `.peerLost` carries the same hint when the service disappears.
///
/// When the avahi-daemon is missing at start or restarts later, the transport logs one
/// line, keeps its TCP listener and links, and resumes publishing and browsing when the
/// daemon is back. Built without the `MDNS` package trait, ``listen(context:)`` throws
/// `.transportUnavailable`.
///
/// ```swift
/// let mdns = MDNSTransport(configuration: .init(discoveryMode: .normal, listen: ["0.0.0.0:0"]))
/// let context = TransportContext(localPeerID: me, logger: logger) { event in
///     if case .peerDiscovered(let hint) = event { found.yield(hint) }
/// }
/// try await mdns.listen(context: context)  // until the task is cancelled
/// ```
public final class MDNSTransport: Transport, TransportCounting {
    /// The transport's name, `"mdns"` unless another was given.
    public let name: String
    /// The configuration this transport was made with.
    public let configuration: Configuration
    /// Reliable, ordered TCP links found by discovery; MTU = `max_frame_size`.
    public let capabilities: TransportCapabilities

    private let tcp: TCPTransport
    private let state: Mutex<State>

    private enum Phase { case idle, starting, running, stopped }

    private struct State {
        var phase = Phase.idle
        var hints: [MDNSService: PeerHint] = [:]
        /// The discovery mode in effect (the configuration's until changed).
        var mode: DiscoveryMode
        /// Bumped by every ``setDiscoveryMode(_:)``; orders the changes it sends.
        var modeVersion = 0
        /// What is published in a publishing mode, once listening.
        var targets: [MDNSPublishTarget] = []
        var localPeerID: PeerID?
        /// How often discovery browses (``apply(_:)``); nil: continuously.
        var browseInterval: Duration?
        #if canImport(CAvahi)
        var discovery: MDNSDiscovery?
        #endif
    }

    /// Creates a transport; nothing is bound or published before ``listen(context:)``.
    /// - Parameters:
    ///   - configuration: Discovery mode, service type, interfaces, TCP listen addresses;
    ///     checked by ``listen(context:)``.
    ///   - name: The transport name reported by ``name`` and hints; default `"mdns"`.
    public init(configuration: Configuration = Configuration(), name: String = "mdns") {
        self.name = name
        self.configuration = configuration
        self.tcp = TCPTransport(
            configuration: TCPTransport.Configuration(
                listen: configuration.listen,
                bootstrap: [],
                maxFrameSize: configuration.maxFrameSize,
                connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds
            ),
            name: name
        )
        self.capabilities = TransportCapabilities(
            maxFrameSize: configuration.maxFrameSize,
            nominalBitrate: 1_000_000_000,
            isReliable: true,
            needsDiscovery: true,
            powerCost: 0
        )
        state = Mutex(State(mode: configuration.discoveryMode))
    }

    /// The TCP addresses actually listened on (`"ip:port"`) while ``listen(context:)``
    /// runs: the addresses of its `.listening` event.
    public var boundAddresses: [String] { tcp.boundAddresses }

    /// The discovery mode in effect: the configuration's `discovery_mode` until
    /// ``setDiscoveryMode(_:)`` changes it.
    public var discoveryMode: DiscoveryMode { state.withLock { $0.mode } }

    /// Changes what this transport reveals on the local network, at run time.
    ///
    /// While ``listen(context:)`` runs, the published service is withdrawn (browsers on
    /// the network see it go away) and published again as `mode` says: with the peer ID
    /// in the TXT record (`normal`), without it under a new random instance name
    /// (`cautious`), or not at all (`paranoid`). Browsing, the TCP listener and every
    /// link go on undisturbed. Before `listen`, the mode is the one it will start with.
    /// When the avahi-daemon is away, the mode applies when it is back.
    public func setDiscoveryMode(_ mode: DiscoveryMode) async {
        #if canImport(CAvahi)
        let (discovery, peer, targets, version) = state.withLock { state in
            state.mode = mode
            state.modeVersion += 1
            return (state.discovery, state.localPeerID, state.targets, state.modeVersion)
        }
        guard let discovery, let peer else { return }
        await apply(mode, version: version, to: discovery, peer: peer, targets: targets)
        #else
        state.withLock { $0.mode = mode }
        #endif
    }

    /// Takes a power profile's pacing: with a ``TransportPacing/browseInterval`` the
    /// transport browses for 30 s once per interval instead of all the time (it stays
    /// published, and a service not seen again in a window is reported lost); nil
    /// browses continuously. Applies at once while listening, else when it starts.
    public func apply(_ pacing: TransportPacing) async {
        #if canImport(CAvahi)
        let discovery = state.withLock { state in
            state.browseInterval = pacing.browseInterval
            return state.discovery
        }
        discovery?.setBrowseInterval(pacing.browseInterval)
        #else
        state.withLock { $0.browseInterval = pacing.browseInterval }
        #endif
    }

    /// What remotes made the inner TCP listener refuse or drop (see `TCPTransport.counters`).
    public var counters: [String: Int] { tcp.counters }

    /// Runs the inner TCP transport's `listen` (inbound links are forwarded), publishes
    /// its port (unless the mode is `paranoid`; see ``setDiscoveryMode(_:)``), browses, and reports `.listening` with the TCP
    /// addresses; runs until the calling task is cancelled, then withdraws the service
    /// and returns after the listener and every link closed.
    ///
    /// A missing avahi-daemon does not fail it when `wait_for_daemon` is true (the
    /// default): discovery begins when the daemon appears.
    /// - Throws: ``MeshError`` `.invalidConfiguration` for a bad configuration;
    ///   `.transportUnavailable` (one line) when built without the `MDNS` trait, when no
    ///   listen address binds, or when no daemon answers and `wait_for_daemon` is false;
    ///   `.invalidArgument` when called twice.
    public func listen(context: TransportContext) async throws {
        try configuration.validate()
        try state.withLock { state in
            guard state.phase == .idle else {
                throw MeshError(.invalidArgument, "mdns transport: listen was already called; make a new transport")
            }
            state.phase = .starting
        }
        defer { state.withLock { $0.phase = .stopped } }
        #if canImport(CAvahi)
        try await withThrowingDiscardingTaskGroup { group in
            let (bound, boundSink) = AsyncStream.makeStream(of: [String].self)
            let tcpContext = TransportContext(localPeerID: context.localPeerID, logger: context.logger) { event in
                switch event {
                case .listening(let addresses): boundSink.yield(addresses)
                case .inboundLink: context.report(event)
                case .peerDiscovered, .peerLost: break  // the inner transport has no bootstrap
                }
            }
            group.addTask { [tcp] in
                defer { boundSink.finish() }
                try await tcp.listen(context: tcpContext)
            }
            var boundAddresses: [String]?
            for await addresses in bound {
                boundAddresses = addresses
                break
            }
            // No addresses: the inner listen failed, and the group throws its error.
            guard let addresses = boundAddresses else { return }
            let (discovery, targets, startMode) = try makeDiscovery(addresses: addresses, context: context)
            try await discovery.start()
            // A mode set while starting was not seen by makeDiscovery: apply it now.
            let (mode, version, browseInterval) = state.withLock { state in
                state.discovery = discovery
                state.targets = targets
                state.localPeerID = context.localPeerID
                return (state.mode, state.modeVersion, state.browseInterval)
            }
            if browseInterval != nil { discovery.setBrowseInterval(browseInterval) }
            if mode != startMode {
                await apply(mode, version: version, to: discovery, peer: context.localPeerID, targets: targets)
            }
            group.addTask { await discovery.run() }
            group.addTask { [weak self, name] in
                for await event in discovery.events {
                    self?.report(event, transport: name, context: context)
                }
            }
            state.withLock { $0.phase = .running }
            context.logger.debug("mdns: listening on \(addresses), mode \(mode.rawValue)")
            context.report(.listening(addresses: addresses))
            await waitUntilCancelled()
        }
        #else
        throw MeshError(
            .transportUnavailable,
            "mdns: this build has no Avahi support (built without the MDNS trait or without libavahi-client-dev)"
        )
        #endif
    }

    /// Opens a TCP link to a discovered (or configured) hint's `ip:port`.
    /// - Throws: ``MeshError`` `.dialFailed` when nothing answers; `.notRunning` when
    ///   ``listen(context:)`` is not running; `.invalidArgument` for an address that is
    ///   not `ip:port`.
    public func dial(_ hint: PeerHint) async throws -> any Link {
        guard state.withLock({ $0.phase == .running }) else {
            throw MeshError(.notRunning, "mdns transport is not running; run listen(context:) first")
        }
        return try await tcp.dial(PeerHint(transport: tcp.name, address: hint.address, peerID: hint.peerID))
    }

    // MARK: Internals

    #if canImport(CAvahi)
    /// The discovery for a TCP listener bound to `addresses`, what it publishes in a
    /// publishing mode, and the mode it starts in.
    /// - Throws: `.transportUnavailable` when none of them can be published.
    private func makeDiscovery(
        addresses: [String],
        context: TransportContext
    ) throws -> (MDNSDiscovery, [MDNSPublishTarget], DiscoveryMode) {
        let targets = MDNSPublishTarget.targets(boundAddresses: addresses, ipv6: configuration.ipv6)
        guard !targets.isEmpty else {
            throw MeshError(
                .transportUnavailable,
                "mdns: no usable TCP listener to publish (bound: \(addresses)); "
                    + "listen on an IPv4 address or set ipv6: true for IPv6 ones"
            )
        }
        let mode = state.withLock { $0.mode }
        let options = MDNSDiscoveryOptions(
            serviceType: configuration.serviceType,
            serviceName: serviceName(for: context.localPeerID, mode: mode),
            publish: mode.publishes ? targets : [],
            txt: MDNSTXTRecord(identity: mode.revealsIdentity ? context.localPeerID : nil),
            browse: true,
            interfaces: configuration.interfaces,
            ipv6: configuration.ipv6,
            ownPeerID: context.localPeerID,
            waitForDaemon: configuration.waitForDaemon,
            retryInterval: .milliseconds(configuration.retryIntervalMilliseconds)
        )
        return (try MDNSDiscovery(options: options, logger: context.logger), targets, mode)
    }

    /// Makes `discovery` publish what `mode` says (see ``setDiscoveryMode(_:)``).
    private func apply(
        _ mode: DiscoveryMode,
        version: Int,
        to discovery: MDNSDiscovery,
        peer: PeerID,
        targets: [MDNSPublishTarget]
    ) async {
        await discovery.republish(
            mode.publishes ? targets : [],
            txt: MDNSTXTRecord(identity: mode.revealsIdentity ? peer : nil),
            serviceName: serviceName(for: peer, mode: mode),
            version: version
        )
    }

    private func report(_ event: MDNSDiscoveryEvent, transport: String, context: TransportContext) {
        switch event {
        case .found(let service):
            let hint = service.hint(transport: transport)
            state.withLock { $0.hints[service] = hint }
            context.report(.peerDiscovered(hint))
        case .lost(let service):
            let hint = state.withLock { $0.hints.removeValue(forKey: service) } ?? service.hint(transport: transport)
            context.report(.peerLost(hint))
        case .published, .daemon:
            break
        }
    }
    #endif

    private func serviceName(for peer: PeerID, mode: DiscoveryMode) -> String {
        if !configuration.serviceName.isEmpty { return configuration.serviceName }
        switch mode {
        case .normal:
            return "scmesh-\(peer.short)"
        case .cautious, .paranoid:
            return "scmesh-\(PeerID.random().short)"
        }
    }

    /// The port of `"ip:port"` / `"[v6]:port"`.
    static func port(of address: String) -> UInt16? {
        guard let colon = address.lastIndex(of: ":") else { return nil }
        return UInt16(address[address.index(after: colon)...])
    }
}
