import Logging
import MeshCore
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The TCP transport on SwiftNIO: listens on configured addresses, reports configured
/// bootstrap peers as hints, dials hints, and moves frames with a 2-byte big-endian length
/// prefix (so the link MTU is ``Configuration/maxFrameSize``, at most 65,535).
///
/// The router does everything above moving frames: handshake, fragmentation, acks,
/// keepalive, reconnect with backoff to the hints it knows, and one link per peer.
///
/// ```swift
/// let tcp = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"]))
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask {
///         try await tcp.listen(context: TransportContext(localPeerID: me, logger: logger) { event in
///             if case .listening(let addresses) = event { print(addresses) }  // ["127.0.0.1:41234"]
///         })
///     }
///     let link = try await tcp.dial(PeerHint(transport: "tcp", address: "127.0.0.1:7420"))
///     ...
///     group.cancelAll()  // closes the listener and every link
/// }
/// ```
///
/// Limits: at most ``Configuration/maxInbound`` inbound connections at once and at most
/// ``Configuration/maxPerAddress`` from one remote IP; a connection over a limit is
/// closed on accept. Outbound links (``dial(_:)``) are not limited.
///
/// Log lines a remote can cause (refused connections, links closed on bad frames or
/// resets) go through a ``LogLimiter``: one line per kind per 10 s plus a count. Every
/// occurrence is counted in ``counters`` (shown by `scmesh status`).
public final class TCPTransport: Transport, TransportCounting {
    /// The transport's name: `"tcp"` unless another was given (a wrapping transport, such
    /// as mDNS, may pass its own so its links and hints carry that name).
    public let name: String
    /// The configuration this transport was made with.
    public let configuration: Configuration
    /// Reliable, ordered, mains-powered; MTU = ``Configuration/maxFrameSize``.
    public let capabilities: TransportCapabilities

    private let group: any EventLoopGroup
    let state: Mutex<State>
    /// Set by ``listen(context:)`` (it needs the context's logger).
    let limiter = Mutex<LogLimiter?>(nil)

    typealias Server = NIOAsyncChannel<TCPLink.Wrapped, Never>

    enum Phase {
        case idle
        case starting
        case running
        case stopped
    }

    struct State {
        var phase = Phase.idle
        var logger = Logger(label: "scmesh.transport.tcp")
        var addresses: [String] = []
        /// Every link not yet ended; nil while the link is being set up.
        var links: [LinkID: TCPLink?] = [:]
        /// Remote IP of each live inbound link, for the limits.
        var inboundIP: [LinkID: String] = [:]
        var inboundPerIP: [String: Int] = [:]
        /// Connections NIO accepted that the accept loop has not taken yet. A stop
        /// cancels the loop, which drops what it had not taken: those are closed here.
        var unclaimed: [LinkID: any Channel] = [:]
    }

    /// Creates a transport; nothing is bound before ``listen(context:)``.
    ///
    /// - Parameters:
    ///   - configuration: Listen and bootstrap addresses, limits; checked by ``listen(context:)``.
    ///   - eventLoopGroup: The NIO event loops to run on; `nil` uses
    ///     `MultiThreadedEventLoopGroup.singleton`.
    ///   - name: The transport name reported by ``name`` and hints; default `"tcp"`.
    public init(
        configuration: Configuration = Configuration(),
        eventLoopGroup: (any EventLoopGroup)? = nil,
        name: String = "tcp"
    ) {
        self.name = name
        self.configuration = configuration
        self.group = eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton
        self.capabilities = TransportCapabilities(
            maxFrameSize: configuration.maxFrameSize,
            nominalBitrate: 1_000_000_000,
            isReliable: true,
            needsDiscovery: false,
            powerCost: 0
        )
        self.state = Mutex(State())
    }

    /// The addresses actually listened on, as `"ip:port"` / `"[ip]:port"` (the real port
    /// when the config said port 0), while ``listen(context:)`` runs; the same list as
    /// its `.listening` event. Empty before and after.
    public var boundAddresses: [String] {
        state.withLock { $0.addresses }
    }

    /// Refusals and failures a remote caused, by kind, since ``listen(context:)``
    /// started: `refused.max_inbound`, `refused.max_per_address`,
    /// `link_closed.<error code>` (e.g. `link_closed.frameTooLarge`).
    public var counters: [String: Int] {
        limiter.withLock { $0?.totals ?? [:] }
    }

    /// Binds every listen address, reports `.listening` with the bound addresses and
    /// every bootstrap entry as a `.peerDiscovered` hint, then accepts connections until
    /// the calling task is cancelled. Returns after the listeners and every link closed.
    ///
    /// An address that cannot be bound is logged and skipped while another one binds.
    /// - Throws: ``MeshError`` `.invalidConfiguration` for a bad configuration;
    ///   `.transportUnavailable` (one line) when no listen address could be bound;
    ///   `.invalidArgument` when called a second time.
    public func listen(context: TransportContext) async throws {
        try configuration.validate()
        let logger = context.logger
        try state.withLock { state in
            guard state.phase == .idle else {
                throw MeshError(
                    .invalidArgument,
                    "TCP transport was already started; make a new TCPTransport to listen again"
                )
            }
            state.phase = .starting
            state.logger = logger
        }
        let limiter = LogLimiter(logger: logger)
        self.limiter.withLock { $0 = limiter }
        var servers: [Server] = []
        var failures: [String] = []
        for entry in configuration.listen {
            do {
                servers.append(try await bind(entry, logger: logger, failures: limiter))
            } catch {
                let reason = Self.reason(error)
                failures.append("\(entry) (\(reason))")
                logger.warning("TCP cannot listen on \(entry): \(reason)")
            }
        }
        if servers.isEmpty && !configuration.listen.isEmpty {
            state.withLock { $0.phase = .stopped }
            throw MeshError(
                .transportUnavailable,
                "TCP could not listen on \(failures.joined(separator: ", ")); free the port or change transports.\(name).listen"
            )
        }
        let addresses = servers.map { TCPAddress.text(of: $0.channel.localAddress) }
        state.withLock { state in
            state.phase = .running
            state.addresses = addresses
        }
        if !addresses.isEmpty {
            logger.info("TCP listening on \(addresses.joined(separator: ", "))")
        }
        context.report(.listening(addresses: addresses))
        for entry in configuration.bootstrap {
            context.report(.peerDiscovered(PeerHint(transport: name, address: entry)))
        }
        await withDiscardingTaskGroup { group in
            for server in servers {
                group.addTask { await self.acceptLoop(server, context: context) }
            }
            group.addTask { await limiter.run() }
            await waitUntilCancelled()
            for server in servers { server.channel.close(promise: nil) }
        }
        await shutDown()
    }

    private func bind(_ entry: String, logger: Logger, failures: LogLimiter) async throws -> Server {
        let address = try TCPAddress(entry)
        guard let socketAddress = try address.socketAddress() else {
            throw MeshError(.invalidConfiguration, "'\(entry)' is not an IP address")
        }
        let maxFrameSize = configuration.maxFrameSize
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: Self.writeWatermarks)
            .bind(
                to: socketAddress,
                serverBackPressureStrategy: .init(lowWatermark: 4, highWatermark: 16)
            ) { [weak self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let id = LinkID.next()
                    // Throwing here makes NIO close the connection.
                    guard let self, self.holdUnclaimed(channel, id: id) else {
                        throw MeshError(.transportUnavailable, "TCP is stopping; the connection was closed")
                    }
                    return try TCPLink.wrap(
                        channel,
                        id: id,
                        maxFrameSize: maxFrameSize,
                        logger: logger,
                        failures: failures
                    )
                }
            }
    }

    /// Connects to `hint.address` (`"host:port"`, `"[ipv6%zone]:port"`; DNS names allowed).
    /// - Throws: ``MeshError`` `.dialFailed` when the connection is refused, times out
    ///   (``Configuration/connectTimeoutMilliseconds``) or the name does not resolve;
    ///   `.invalidArgument` for an address that does not parse; `.notRunning` when
    ///   ``listen(context:)`` is not running.
    public func dial(_ hint: PeerHint) async throws -> any Link {
        let address = try TCPAddress(hint.address)
        guard address.port > 0 else {
            throw MeshError(.invalidArgument, "cannot dial \(hint.address): port 0; give the peer's listening port")
        }
        let socketAddress = try address.socketAddress()
        let id = LinkID.next()
        let logger = try state.withLock { state in
            guard state.phase == .running else {
                throw MeshError(
                    .notRunning,
                    "TCP transport is not running; run listen(context:) before dialling \(hint.address)"
                )
            }
            state.links[id] = .some(nil)
            return state.logger
        }
        let maxFrameSize = configuration.maxFrameSize
        let failures = limiter.withLock { $0 }
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(Int64(configuration.connectTimeoutMilliseconds)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.writeBufferWaterMark, value: Self.writeWatermarks)
        let initializer: @Sendable (any Channel) -> EventLoopFuture<TCPLink.Wrapped> = {
            channel in
            channel.eventLoop.makeCompletedFuture {
                try TCPLink.wrap(channel, id: id, maxFrameSize: maxFrameSize, logger: logger, failures: failures)
            }
        }
        let channel: TCPLink.Wrapped
        do {
            if let socketAddress {
                channel = try await bootstrap.connect(to: socketAddress, channelInitializer: initializer)
            } else {
                channel = try await bootstrap.connect(
                    host: address.host,
                    port: address.port,
                    channelInitializer: initializer
                )
            }
        } catch {
            linkEnded(id)
            throw MeshError(
                .dialFailed,
                "could not connect to tcp://\(address): \(Self.reason(error)); check that a node listens there",
                cause: error
            )
        }
        let link = TCPLink(channel, mtu: maxFrameSize, onEnded: { [weak self] id in self?.linkEnded(id) })
        guard register(link) else {
            await link.close()
            throw MeshError(.notRunning, "TCP transport stopped while dialling \(hint.address)")
        }
        link.watchForEnd(logger: logger)
        logger.debug("TCP outbound link \(link.id) to \(address)", metadata: ["link": "\(link.id)"])
        return link
    }

    /// Socket write buffer watermarks: `send` suspends above 256 KiB queued in NIO.
    static let writeWatermarks = ChannelOptions.Types.WriteBufferWaterMark(low: 64 * 1024, high: 256 * 1024)

    /// A short, human-readable reason for a NIO or MeshCore error.
    static func reason(_ error: any Error) -> String {
        switch error {
        case let error as MeshError:
            return error.message
        case let error as IOError:
            // IOError's description is "call(arguments:): reason (errno: N)"; the call
            // syntax means nothing to a user.
            return String(cString: strerror(error.errnoCode)).lowercased()
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first {
                return reason(first.error)
            }
            if error.dnsAError != nil || error.dnsAAAAError != nil {
                return "host name \(error.host) did not resolve"
            }
            return "no address to connect to for \(error.host)"
        case ChannelError.connectTimeout(let timeout):
            return "no answer within \(timeout.nanoseconds / 1_000_000) ms"
        default:
            return "\(error)"
        }
    }
}
