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
    /// Open links while ``listen(context:)`` runs; nil before and after.
    private let links = Mutex<[LinkID: PipeLink]?>(nil)

    /// Creates a transport; nothing is opened before ``listen(context:)``.
    public init(configuration: Configuration = Configuration(), name: String = "pipe") {
        self.name = name
        self.configuration = configuration
        capabilities = TransportCapabilities(
            maxFrameSize: configuration.mtu, nominalBitrate: 10_000_000_000, isReliable: true, needsDiscovery: false,
            powerCost: 0)
    }

    /// Listens on ``Configuration/listen`` (if set), reports it and ``Configuration/peers``,
    /// and accepts links until the task is cancelled; then removes the socket file and
    /// closes every link.
    /// - Throws: `MeshError` `.invalidConfiguration`, `.invalidArgument` when already
    ///   listening, or `.transportUnavailable` when the path cannot be listened on.
    public func listen(context: TransportContext) async throws {
        try configuration.validate()
        let listener = try configuration.listen.map(PipeSocket.listen(path:))
        let first = links.withLock { links in
            defer { links = links ?? [:] }
            return links == nil
        }
        guard first else {
            listener?.shutdown()
            throw MeshError(.invalidArgument, "pipe transport is already listening; make a new one")
        }
        context.report(.listening(addresses: configuration.listen.map { [$0] } ?? []))
        for peer in configuration.peers { context.report(.peerDiscovered(PeerHint(transport: name, address: peer))) }
        // The accept loop runs in this task; cancelling it shuts the listener, which wakes the loop.
        await withTaskCancellationHandler {
            if let listener { await accept(on: listener, context: context) }
            await waitUntilCancelled()
        } onCancel: {
            listener?.shutdown()
        }
        if let path = configuration.listen { unlink(path) }
        let open = links.withLock { links in
            defer { links = nil }
            return Array((links ?? [:]).values)
        }
        for link in open { await link.close() }
    }

    private func accept(on listener: PipeSocket, context: TransportContext) async {
        while !listener.isShut {
            do {
                guard let socket = try listener.accept() else {
                    await listener.wait(writable: false)
                    continue
                }
                let link = makeLink(socket, remote: "inbound")
                guard register(link) else {
                    await link.close()
                    continue
                }
                context.report(.inboundLink(link))
            } catch {
                context.logger.warning("pipe stopped accepting on \(configuration.listen ?? ""): \(error)")
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
            throw MeshError(.notRunning, "pipe transport is not listening; run listen(context:) before dialling \(hint.address)")
        }
        return link
    }

    private func makeLink(_ socket: PipeSocket, remote: String) -> PipeLink {
        PipeLink(socket: socket, remoteAddress: remote, mtu: configuration.mtu) { [weak self] id in
            _ = self?.links.withLock { $0?.removeValue(forKey: id) }
        }
    }

    private func register(_ link: PipeLink) -> Bool {
        links.withLock { links in
            guard links != nil else { return false }
            links?[link.id] = link
            return true
        }
    }
}
