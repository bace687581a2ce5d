import Glibc
import Logging
import MeshCore
import Synchronization

/// Moves SCMesh frames between processes of one machine over Unix domain sockets
/// (`SOCK_SEQPACKET`: one frame per packet). An address is a socket path.
///
/// ```swift
/// let pipe = PipeTransport(configuration: .init(listen: "/tmp/a.sock", peers: ["/tmp/b.sock"]))
/// ```
public final class PipeTransport: Transport {
    /// The transport's name: its key under `transports:`.
    public let name: String
    /// The configuration it was made with.
    public let configuration: Configuration
    /// Reliable and ordered; MTU ``Configuration/mtu``; about as fast as memory.
    public let capabilities: TransportCapabilities
    /// Configured peers (at start) and inbound links; finishes after ``stop()``.
    public let events: AsyncStream<TransportEvent>
    private let eventSink: AsyncStream<TransportEvent>.Continuation
    private let state = Mutex(State())

    private enum Phase { case idle, running, stopped }

    private struct State {
        var phase = Phase.idle
        var listener: PipeSocket?
        var acceptLoop: Task<Void, Never>?
        var links: [LinkID: PipeLink] = [:]
    }

    /// Creates a stopped transport.
    public init(configuration: Configuration = Configuration(), name: String = "pipe") {
        self.name = name
        self.configuration = configuration
        capabilities = TransportCapabilities(
            maxFrameSize: configuration.mtu, nominalBitrate: 10_000_000_000, isReliable: true, needsDiscovery: false,
            powerCost: 0)
        (events, eventSink) = AsyncStream.makeStream(of: TransportEvent.self, bufferingPolicy: .bufferingOldest(256))
    }

    /// Listens on ``Configuration/listen`` (if set) and reports ``Configuration/peers``.
    /// - Throws: `MeshError` `.invalidConfiguration`, or `.transportUnavailable` when the
    ///   path cannot be listened on.
    public func start(context: TransportContext) async throws {
        try configuration.validate()
        let listener = try configuration.listen.map(PipeSocket.listen(path:))
        let started = state.withLock { state in
            guard state.phase == .idle else { return false }
            state.phase = .running
            state.listener = listener
            if let listener { state.acceptLoop = Task { await self.accept(on: listener, logger: context.logger) } }
            return true
        }
        guard started else {
            listener?.shutdown()
            throw MeshError(.invalidArgument, "pipe transport was already started; make a new one")
        }
        for peer in configuration.peers { eventSink.yield(.peerDiscovered(PeerHint(transport: name, address: peer))) }
    }

    private func accept(on listener: PipeSocket, logger: Logger) async {
        while !listener.isShut {
            do {
                guard let socket = try listener.accept() else {
                    await listener.wait(writable: false)
                    continue
                }
                let link = makeLink(socket, remote: "inbound")
                guard register(link), case .enqueued = eventSink.yield(.inboundLink(link)) else {
                    await link.close()
                    continue
                }
            } catch {
                logger.warning("pipe stopped accepting on \(configuration.listen ?? ""): \(error)")
                return
            }
        }
    }

    /// Connects to the socket at `hint.address`.
    /// - Throws: `MeshError` `.dialFailed` when nothing listens there; `.notRunning`.
    public func dial(_ hint: PeerHint) async throws -> any Link {
        let link = makeLink(try PipeSocket.connect(path: hint.address), remote: hint.address)
        guard register(link) else {
            await link.close()
            throw MeshError(.notRunning, "pipe transport is not running; start it before dialling \(hint.address)")
        }
        return link
    }

    /// Closes the listener (removing its socket file) and every link; finishes ``events``.
    public func stop() async {
        let (listener, loop, links) = state.withLock { state in
            defer { (state.phase, state.listener, state.acceptLoop, state.links) = (.stopped, nil, nil, [:]) }
            return (state.listener, state.acceptLoop, Array(state.links.values))
        }
        if let listener, let path = configuration.listen {
            listener.shutdown()
            unlink(path)
        }
        await loop?.value
        for link in links { await link.close() }
        eventSink.finish()
    }

    private func makeLink(_ socket: PipeSocket, remote: String) -> PipeLink {
        PipeLink(socket: socket, transportName: name, remoteAddress: remote, mtu: configuration.mtu) { [weak self] id in
            _ = self?.state.withLock { $0.links.removeValue(forKey: id) }
        }
    }

    private func register(_ link: PipeLink) -> Bool {
        state.withLock { state in
            if state.phase == .running { state.links[link.id] = link }
            return state.phase == .running
        }
    }
}
