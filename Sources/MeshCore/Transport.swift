import Logging

/// A plugin that moves opaque frames between this node and others over one medium
/// (TCP, mDNS-found TCP, BLE, ...).
///
/// A transport knows nothing of identities, encryption, routing or relaying: the
/// ``Router`` wraps every ``Link`` in the link handshake, fragments frames to the
/// link's MTU, acknowledges hops and escalates between transports.
///
/// ## Contract
/// - ``start(context:)`` is called exactly once, before any other method but
///   ``name``, ``capabilities`` and ``events``. When the medium is not usable here
///   (no kernel support, no daemon, no adapter) it throws a ``MeshError`` with code
///   `.transportUnavailable` whose message is one line saying why; the node logs it
///   and carries on with its other transports.
/// - ``events`` has exactly one consumer (the router). It reports discovered and lost
///   peer hints and every inbound link. It finishes after ``stop()``.
/// - ``dial(_:)`` opens one new outbound ``Link`` or throws (`.dialFailed` when
///   nothing answers). It may be called concurrently and must not block other calls.
/// - ``stop()`` closes the listener and every link the transport created, then
///   finishes ``events``. It is idempotent.
/// - Frames larger than `capabilities.maxFrameSize` are never handed to a link.
public protocol Transport: Sendable {
    /// The registered name: `"tcp"`, `"mdns"`, `"ble"`, `"loopback"`, ...
    var name: String { get }
    /// What the medium can do; read by the routing policy.
    var capabilities: TransportCapabilities { get }
    /// Discovery and inbound-link events; one consumer; finishes after ``stop()``.
    var events: AsyncStream<TransportEvent> { get }
    /// Starts listening and discovering. Called exactly once.
    /// - Throws: ``MeshError`` `.transportUnavailable` with a one-line reason.
    func start(context: TransportContext) async throws
    /// Opens an outbound link to a hint produced by this transport or configured.
    /// - Throws: ``MeshError`` `.dialFailed` when the remote does not answer.
    func dial(_ hint: PeerHint) async throws -> any Link
    /// Stops the transport, closes its links and finishes ``events``. Idempotent.
    func stop() async
}

/// What a transport reports to the router.
public enum TransportEvent: Sendable {
    /// A peer may be reachable at this hint; the router decides whether to dial.
    case peerDiscovered(PeerHint)
    /// A previously discovered hint went away.
    case peerLost(PeerHint)
    /// A remote opened a link to us. The router runs the handshake on it.
    case inboundLink(any Link)
}

/// What the router gives a transport when it starts.
public struct TransportContext: Sendable {
    /// The local node's peer ID (for advertising; never trust it in a remote's hint).
    public var localPeerID: PeerID
    /// The logger the transport should use, already labelled with the transport name.
    public var logger: Logger

    /// Creates a context.
    public init(localPeerID: PeerID, logger: Logger) {
        self.localPeerID = localPeerID
        self.logger = logger
    }
}
