import Foundation
import Logging
import MeshCore
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The node's local control API: a Unix domain socket in the data directory
/// (`control.sock`, mode 0600) speaking JSON lines — one request object per line,
/// one reply object per line (see ``ControlRequest`` and the README).
///
/// A stale socket file left by a dead node is replaced; a live node on the same data
/// directory is an error. The socket file is removed on shutdown.
public final class ControlServer: Service, Sendable {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>
    typealias Listener = NIOAsyncChannel<Connection, Never>

    private enum State {
        case idle
        case bound(Listener)
        case running
        case finished
    }

    /// The socket's path.
    public let socketPath: String
    private let dataDirectory: String
    private let handler: ControlHandler
    private let maximumLineLength: Int
    private let logger: Logger
    private let state = Mutex(State.idle)

    init(dataDirectory: String, handler: ControlHandler, maximumLineLength: Int, logger: Logger) {
        self.dataDirectory = dataDirectory
        self.socketPath = DataDirectory.controlSocketPath(dataDirectory)
        self.handler = handler
        self.maximumLineLength = maximumLineLength
        self.logger = logger
    }

    /// Binds the socket (replacing a stale one). ``run()`` binds when this was not
    /// called; call it first to fail before anything else starts.
    /// - Throws: `.nodeAlreadyRunning` when a live node answers on the socket;
    ///   `.invalidConfiguration` when the path is too long or not a socket.
    public func bind() async throws {
        let isIdle = state.withLock { if case .idle = $0 { true } else { false } }
        guard isIdle else { return }
        try await Self.clearStaleSocket(at: socketPath, dataDirectory: dataDirectory)
        let maximumLineLength = maximumLineLength
        let listener: Listener
        do {
            listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 64)
                .bind(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineFrameDecoder(maximumLength: maximumLineLength)))
                        return try Connection(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw MeshError(.invalidConfiguration, "cannot listen on \(socketPath): \(error)", cause: error)
        }
        chmod(socketPath, 0o600)
        let stored = state.withLock { state -> Bool in
            guard case .idle = state else { return false }
            state = .bound(listener)
            return true
        }
        if !stored { try? await listener.channel.close() }
    }

    /// Serves connections until graceful shutdown or cancellation, then removes the socket file.
    public func run() async throws {
        try await bind()
        let listener: Listener? = state.withLock { state in
            guard case .bound(let listener) = state else { return nil }
            state = .running
            return listener
        }
        guard let listener else {
            throw MeshError(.invalidArgument, "ControlServer.run() was called twice")
        }
        logger.debug("control socket listening", metadata: ["path": "\(socketPath)"])
        defer {
            unlink(socketPath)
            state.withLock { $0 = .finished }
        }
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                do {
                    try await listener.executeThenClose { inbound in
                        for try await connection in inbound {
                            group.addTask { await self.serve(connection) }
                        }
                    }
                } catch where Task.isCancelled {
                    // Cancellation ends the accept loop; nothing to report.
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            listener.channel.close(promise: nil)
        }
    }

    private func serve(_ connection: Connection) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                do {
                    for try await line in inbound {
                        let bytes = Array(buffer: line)
                        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                        let reply = await handler.respond(to: bytes)
                        try await outbound.write(ByteBuffer(bytes: reply + [0x0A]))
                    }
                } catch let error as LineFrameDecoder.LineTooLong {
                    let reply = ControlJSON.failure(error.description, code: MeshError.Code.controlRequestFailed.name)
                    try await outbound.write(ByteBuffer(bytes: reply + [0x0A]))
                }
            }
        } catch {
            logger.debug("control connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// Removes a socket file no live node answers on.
    static func clearStaleSocket(at path: String, dataDirectory: String) async throws {
        guard path.utf8.count <= 107 else {
            throw MeshError(
                .invalidConfiguration,
                "control socket path \(path) is \(path.utf8.count) bytes, more than the 107 a Unix socket allows; use a shorter --data-dir")
        }
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return }
        guard attributes[.type] as? FileAttributeType == .typeSocket else {
            throw MeshError(.invalidConfiguration, "\(path) exists and is not a socket; move it away")
        }
        if await ControlClient.isAnswering(socketPath: path) {
            throw MeshError(
                .nodeAlreadyRunning,
                "another node is running with data dir \(dataDirectory) (stop it, or pass another --data-dir)")
        }
        unlink(path)
    }
}
