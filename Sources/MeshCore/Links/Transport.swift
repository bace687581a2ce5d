import Logging

/// A plugin that moves opaque frames between this node and others over one medium
/// (TCP, mDNS-found TCP, BLE, ...).
///
/// A transport knows nothing of identities, encryption, routing or relaying: the
/// ``Router`` wraps every ``Link`` in the link handshake, fragments frames to the
/// link's MTU, acknowledges hops and escalates between transports.
///
/// ## Contract
/// - A transport's whole life is one call of ``listen(context:)``: it starts
///   listening and discovering, reports what happens through
///   ``TransportContext/report(_:)``, and returns only when the calling task is
///   cancelled, after it closed its listener and every link it made. Everything it
///   runs in the background is a child task of that call; it keeps no task of its
///   own. It is called at most once per instance.
/// - When the medium is not usable here (no kernel support, no daemon, no adapter)
///   ``listen(context:)`` throws a ``MeshError`` with code `.transportUnavailable`
///   whose message is one line saying why; the node logs it and carries on with its
///   other transports.
/// - Once it is ready it reports ``TransportEvent/listening(addresses:)`` with the
///   addresses it can be reached at (an empty list when it listens nowhere), and
///   again whenever they change. Until then the core treats it as starting.
/// - ``dial(_:)`` opens one new outbound ``Link`` or throws (`.dialFailed` when
///   nothing answers, `.notRunning` when ``listen(context:)`` is not running). It may
///   be called concurrently and must not block other calls.
/// - Frames larger than `capabilities.maxFrameSize` are never handed to a link.
///
/// ```swift
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { try await tcp.listen(context: context) }   // runs until cancelled
///     let link = try await tcp.dial(PeerHint(transport: "tcp", address: "127.0.0.1:7420"))
///     ...
///     group.cancelAll()
/// }
/// ```
public protocol Transport: Sendable {
    /// The registered name: `"tcp"`, `"mdns"`, `"ble"`, `"loopback"`, ...
    var name: String { get }
    /// What the medium can do; read by the routing policy.
    var capabilities: TransportCapabilities { get }
    /// Runs the transport until the calling task is cancelled: listens, discovers and
    /// reports through `context`. Returns after the listener and every link are closed.
    /// - Throws: ``MeshError`` `.transportUnavailable` with a one-line reason when the
    ///   medium cannot be used here.
    func listen(context: TransportContext) async throws
    /// Opens an outbound link to a hint produced by this transport or configured.
    /// - Throws: ``MeshError`` `.dialFailed` when the remote does not answer.
    func dial(_ hint: PeerHint) async throws -> any Link
    /// Takes new pacing while it runs (a power profile changed): scan and advertising
    /// intervals, transmit power. Called before ``listen(context:)`` too, so a
    /// transport that starts later starts paced. The default ignores it.
    func apply(_ pacing: TransportPacing) async
}

extension Transport {
    /// Ignores pacing: a medium with nothing to pace (TCP).
    public func apply(_ pacing: TransportPacing) async {}
}

/// What a transport reports to the core.
public enum TransportEvent: Sendable {
    /// The transport is ready and can be reached at these addresses (in its own
    /// notation, as a ``PeerHint`` would carry them); reported again when they change.
    case listening(addresses: [String])
    /// A peer may be reachable at this hint; the core decides whether to dial.
    case peerDiscovered(PeerHint)
    /// A previously discovered hint went away.
    case peerLost(PeerHint)
    /// A remote opened a link to us. The core runs the handshake on it.
    case inboundLink(any Link)
}

/// What the core gives a transport's ``Transport/listen(context:)``.
public struct TransportContext: Sendable {
    /// The local node's peer ID (for advertising; never trust it in a remote's hint).
    public var localPeerID: PeerID
    /// The logger the transport should use, already labelled with the transport name.
    public var logger: Logger
    private let sink: @Sendable (TransportEvent) -> Void

    /// Creates a context.
    /// - Parameters:
    ///   - localPeerID: this node's peer ID.
    ///   - logger: the logger the transport uses.
    ///   - report: receives every event; it must not block (the core buffers).
    public init(localPeerID: PeerID, logger: Logger, report: @escaping @Sendable (TransportEvent) -> Void) {
        self.localPeerID = localPeerID
        self.logger = logger
        self.sink = report
    }

    /// Reports an event to the core. Never blocks.
    public func report(_ event: TransportEvent) {
        sink(event)
    }
}

/// Suspends until the current task is cancelled; returns at once if it already is.
/// A transport's ``Transport/listen(context:)`` usually ends with it.
public func waitUntilCancelled() async {
    let (stream, continuation) = AsyncStream.makeStream(of: Never.self)
    await withTaskCancellationHandler {
        for await _ in stream {}
    } onCancel: {
        continuation.finish()
    }
}
