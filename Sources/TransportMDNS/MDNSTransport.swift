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
/// daemon is back. Built without the `MDNS` package trait, ``start(context:)`` throws
/// `.transportUnavailable`.
///
/// ```swift
/// let mdns = MDNSTransport(configuration: .init(discoveryMode: .normal, listen: ["0.0.0.0:0"]))
/// try await mdns.start(context: TransportContext(localPeerID: me, logger: logger))
/// for await event in mdns.events {
///     if case .peerDiscovered(let hint) = event { let link = try await mdns.dial(hint) }
/// }
/// ```
public final class MDNSTransport: Transport {
    /// The transport's name, `"mdns"` unless another was given.
    public let name: String
    /// The configuration this transport was made with.
    public let configuration: Configuration
    /// Reliable, ordered TCP links found by discovery; MTU = `max_frame_size`.
    public let capabilities: TransportCapabilities
    /// Discovered and lost hints, and inbound links. Finishes after ``stop()``.
    public let events: AsyncStream<TransportEvent>

    private let eventSink: AsyncStream<TransportEvent>.Continuation
    private let tcp: TCPTransport
    private let state: Mutex<State>

    private enum Phase { case idle, starting, running, stopped }

    private struct State {
        var phase = Phase.idle
        #if canImport(CAvahi)
        var discovery: MDNSDiscovery?
        #endif
        var forwarders: [Task<Void, Never>] = []
        var hints: [MDNSService: PeerHint] = [:]
    }

    /// Creates a stopped transport.
    /// - Parameters:
    ///   - configuration: Discovery mode, service type, interfaces, TCP listen addresses;
    ///     checked by ``start(context:)``.
    ///   - name: The transport name reported by ``name``, hints and links; default `"mdns"`.
    public init(configuration: Configuration = Configuration(), name: String = "mdns") {
        self.name = name
        self.configuration = configuration
        self.tcp = TCPTransport(
            configuration: TCPTransport.Configuration(
                listen: configuration.listen,
                bootstrap: [],
                maxFrameSize: configuration.maxFrameSize,
                connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds),
            name: name)
        self.capabilities = TransportCapabilities(
            maxFrameSize: configuration.maxFrameSize,
            nominalBitrate: 1_000_000_000,
            isReliable: true,
            needsDiscovery: true,
            powerCost: 0)
        (events, eventSink) = AsyncStream.makeStream(of: TransportEvent.self)
        state = Mutex(State())
    }

    /// The TCP addresses actually listened on (`"ip:port"`), after ``start(context:)``.
    public var boundAddresses: [String] { tcp.boundAddresses }

    /// Starts the TCP listener, publishes its port (unless `paranoid`) and browses.
    ///
    /// A missing avahi-daemon does not fail the start when `wait_for_daemon` is true
    /// (the default): discovery begins when the daemon appears.
    /// - Throws: ``MeshError`` `.invalidConfiguration` for a bad configuration;
    ///   `.transportUnavailable` (one line) when built without the `MDNS` trait, when no
    ///   listen address binds, or when no daemon answers and `wait_for_daemon` is false;
    ///   `.invalidArgument` when called twice.
    public func start(context: TransportContext) async throws {
        try configuration.validate()
        try state.withLock { state in
            guard state.phase == .idle else {
                throw MeshError(.invalidArgument, "mdns transport: start was already called; make a new transport")
            }
            state.phase = .starting
        }
        #if canImport(CAvahi)
        let logger = context.logger
        try await tcp.start(context: context)
        let targets = MDNSPublishTarget.targets(boundAddresses: boundAddresses, ipv6: configuration.ipv6)
        guard !targets.isEmpty else {
            await tcp.stop()
            state.withLock { $0.phase = .stopped }
            eventSink.finish()
            throw MeshError(
                .transportUnavailable,
                "mdns: no usable TCP listener to publish (bound: \(boundAddresses)); "
                    + "listen on an IPv4 address or set ipv6: true for IPv6 ones")
        }
        let mode = configuration.discoveryMode
        let options = MDNSDiscoveryOptions(
            serviceType: configuration.serviceType,
            serviceName: serviceName(for: context.localPeerID),
            publish: mode.publishes ? targets : [],
            txt: MDNSTXTRecord(identity: mode.revealsIdentity ? context.localPeerID : nil),
            browse: true,
            interfaces: configuration.interfaces,
            ipv6: configuration.ipv6,
            ownPeerID: context.localPeerID,
            waitForDaemon: configuration.waitForDaemon,
            retryInterval: .milliseconds(configuration.retryIntervalMilliseconds))
        let discovery: MDNSDiscovery
        do {
            discovery = try MDNSDiscovery(options: options, logger: logger)
            try await discovery.start()
        } catch {
            await tcp.stop()
            state.withLock { $0.phase = .stopped }
            eventSink.finish()
            throw error
        }
        let forwardLinks = Task { [tcp, eventSink] in
            for await event in tcp.events {
                if case .inboundLink = event { eventSink.yield(event) }
            }
        }
        let forwardDiscovery = Task { [weak self, name] in
            for await event in discovery.events {
                guard let self else { return }
                self.report(event, transport: name)
            }
        }
        let stopNow = state.withLock { state in
            guard state.phase == .starting else { return true }
            state.phase = .running
            state.discovery = discovery
            state.forwarders = [forwardLinks, forwardDiscovery]
            return false
        }
        if stopNow {
            // stop() ran while we were starting: it left the cleanup to us.
            await discovery.stop()
            await tcp.stop()
            await forwardLinks.value
            await forwardDiscovery.value
            eventSink.finish()
            return
        }
        logger.debug("mdns: listening on \(boundAddresses), mode \(mode.rawValue)")
        #else
        state.withLock { $0.phase = .stopped }
        eventSink.finish()
        throw MeshError(
            .transportUnavailable,
            "mdns: this build has no Avahi support (built without the MDNS trait or without libavahi-client-dev)")
        #endif
    }

    /// Opens a TCP link to a discovered (or configured) hint's `ip:port`.
    /// - Throws: ``MeshError`` `.dialFailed` when nothing answers; `.notRunning` before
    ///   start or after stop; `.invalidArgument` for an address that is not `ip:port`.
    public func dial(_ hint: PeerHint) async throws -> any Link {
        guard state.withLock({ $0.phase == .running }) else {
            throw MeshError(.notRunning, "mdns transport is not running; call start(context:) first")
        }
        return try await tcp.dial(PeerHint(transport: tcp.name, address: hint.address, peerID: hint.peerID))
    }

    /// Withdraws the service, stops browsing, closes the listener and every link, then
    /// finishes ``events``. Idempotent.
    public func stop() async {
        #if canImport(CAvahi)
        let (discovery, forwarders, previous) = state.withLock { state in
            let taken = (state.discovery, state.forwarders, state.phase)
            state.phase = .stopped
            state.discovery = nil
            state.forwarders = []
            return taken
        }
        switch previous {
        case .stopped, .starting:
            return  // already stopped, or start(context:) sees the change and cleans up
        case .idle:
            eventSink.finish()
            return
        case .running:
            break
        }
        await discovery?.stop()
        await tcp.stop()
        for task in forwarders { await task.value }
        eventSink.finish()
        #else
        state.withLock { $0.phase = .stopped }
        eventSink.finish()
        #endif
    }

    // MARK: Internals

    #if canImport(CAvahi)
    private func report(_ event: MDNSDiscoveryEvent, transport: String) {
        switch event {
        case .found(let service):
            let hint = service.hint(transport: transport)
            state.withLock { $0.hints[service] = hint }
            eventSink.yield(.peerDiscovered(hint))
        case .lost(let service):
            let hint = state.withLock { $0.hints.removeValue(forKey: service) } ?? service.hint(transport: transport)
            eventSink.yield(.peerLost(hint))
        case .published, .daemon:
            break
        }
    }
    #endif

    private func serviceName(for peer: PeerID) -> String {
        if !configuration.serviceName.isEmpty { return configuration.serviceName }
        switch configuration.discoveryMode {
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
