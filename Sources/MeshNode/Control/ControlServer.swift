import Foundation
import Logging
import MeshCore
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The node's local control API: a Unix domain socket in the data directory
/// (`control.sock`, mode 0600) speaking JSON lines — one request object per line,
/// one reply object per line (see ``ControlRequest`` and docs/api.md).
///
/// A stale socket file left by a dead node is replaced; a live node on the same data
/// directory is an error. The socket file is removed on shutdown.
///
/// Bounded: a request line is at most ``Limits/maximumLineLength`` bytes (a longer one
/// is answered `messageTooLarge` as soon as that many bytes arrived, and the
/// connection closed), at most ``Limits/maximumConnections`` connections are served
/// at once (one more is answered with an error and closed), and a client that does
/// not read its replies is dropped after ``Limits/writeTimeout``.
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
    private let limits: Limits
    private let logger: Logger
    private let state = Mutex(State.idle)
    private let connections = Atomic(0)

    /// What the socket refused or dropped, by kind, for `scmesh status`.
    final class Counters: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        func add(_ kind: String) { counts.withLock { $0[kind, default: 0] += 1 } }
        var all: [String: Int] { counts.withLock { $0 } }
    }

    /// What one control socket lets its clients use.
    struct Limits: Sendable {
        /// Longest request line in bytes.
        var maximumLineLength: Int
        /// The config key and value that set ``maximumLineLength``, for error messages.
        var maximumLineLengthSource: String
        /// Connections served at once.
        var maximumConnections: Int
        /// How long a reply may wait for the client to read it.
        var writeTimeout: Duration

        /// The limits a node configuration sets.
        init(_ configuration: NodeConfiguration) {
            let maxMessageSize = configuration.routerConfiguration.maxMessageSize
            maximumLineLength = Self.lineLength(forMessageSize: maxMessageSize)
            maximumLineLengthSource = "max_message_size = \(maxMessageSize)"
            maximumConnections = configuration.node.controlMaxConnections
            writeTimeout = .milliseconds(configuration.node.controlWriteTimeoutMs)
        }

        init(maximumLineLength: Int, maximumLineLengthSource: String, maximumConnections: Int, writeTimeout: Duration) {
            self.maximumLineLength = maximumLineLength
            self.maximumLineLengthSource = maximumLineLengthSource
            self.maximumConnections = maximumConnections
            self.writeTimeout = writeTimeout
        }

        /// A send request of a `size`-byte payload, base64 in JSON, plus 64 KiB for the rest.
        static func lineLength(forMessageSize size: Int) -> Int {
            (size + 2) / 3 * 4 + 65_536
        }
    }

    private let counters: Counters

    init(
        dataDirectory: String,
        handler: ControlHandler,
        limits: Limits,
        counters: Counters = Counters(),
        logger: Logger
    ) {
        self.counters = counters
        self.dataDirectory = dataDirectory
        self.socketPath = DataDirectory.controlSocketPath(dataDirectory)
        self.handler = handler
        self.limits = limits
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
        let maximumLineLength = limits.maximumLineLength
        let listener: Listener
        do {
            listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 64)
                .bind(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineFrameDecoder(maximumLength: maximumLineLength))
                        )
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
                } catch  where Task.isCancelled {
                    // Cancellation ends the accept loop; nothing to report.
                }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            listener.channel.close(promise: nil)
        }
    }

    private func serve(_ connection: Connection) async {
        let admitted = connections.wrappingAdd(1, ordering: .relaxed).newValue <= limits.maximumConnections
        defer { connections.wrappingSubtract(1, ordering: .relaxed) }
        do {
            try await connection.executeThenClose { inbound, outbound in
                guard admitted else {
                    counters.add("refused.control_max_connections")
                    let message =
                        "the node serves at most \(limits.maximumConnections) control connections at once "
                        + "(node.control_max_connections); try again later"
                    try await write(
                        ControlJSON.failure(message, code: MeshError.Code.controlRequestFailed.name),
                        to: outbound,
                        of: connection
                    )
                    // Read what the client sent before closing (for up to a second):
                    // closing on unread data resets the connection, and the client
                    // could lose the reply.
                    outbound.finish()
                    try? await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { for try await _ in inbound {} }
                        group.addTask { try await Task.sleep(for: .seconds(1)) }
                        _ = try await group.next()
                        group.cancelAll()
                        connection.channel.close(promise: nil)
                    }
                    return
                }
                do {
                    for try await line in inbound {
                        let bytes = Array(buffer: line)
                        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                        let reply = await handler.respond(to: bytes)
                        try await write(reply, to: outbound, of: connection)
                    }
                } catch is LineFrameDecoder.LineTooLong {
                    counters.add("refused.request_too_large")
                    let message =
                        "the request is larger than the control socket's limit of \(limits.maximumLineLength) bytes "
                        + "(a payload of \(limits.maximumLineLengthSource) bytes as base64, plus 64 KiB): "
                        + "refused as soon as that many bytes arrived, and nothing was queued; raise max_message_size to send more"
                    try await write(
                        ControlJSON.failure(message, code: MeshError.Code.messageTooLarge.name),
                        to: outbound,
                        of: connection
                    )
                }
            }
        } catch {
            logger.debug("control connection ended", metadata: ["error": "\(error)"])
        }
    }

    /// `bytes` and a newline in one buffer.
    static func line(_ bytes: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(bytes.count + 1)
        buffer.writeBytes(bytes)
        buffer.writeInteger(UInt8(0x0A))
        return buffer
    }

    /// The client did not take a reply within the write timeout.
    struct WriteTimedOut: Error, CustomStringConvertible {
        var description: String { "control client did not read its reply in time; dropped" }
    }

    /// Writes one reply line; closes the connection and throws when the client does
    /// not take it within the write timeout (so a client that never reads holds at
    /// most one reply and its connection only for that long).
    private func write(
        _ reply: [UInt8],
        to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        of connection: Connection
    ) async throws {
        let buffer = Self.line(reply)
        let timeout = limits.writeTimeout
        let written = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await outbound.write(buffer)
                // The writer returns once the channel took the bytes; wait until the
                // client's socket did, so a client that never reads is noticed.
                try await connection.channel.writeAndFlush(ByteBuffer()).get()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = try await group.next() ?? false
            if !first {
                counters.add("dropped.control_write_timeout")
                connection.channel.close(promise: nil)
            }
            group.cancelAll()
            return first
        }
        if !written { throw WriteTimedOut() }
    }

    /// Removes a socket file no live node answers on.
    static func clearStaleSocket(at path: String, dataDirectory: String) async throws {
        guard path.utf8.count <= DataDirectory.maximumSocketPathBytes else {
            throw MeshError(
                .invalidConfiguration,
                "control socket path \(path) is \(path.utf8.count) bytes, more than the \(DataDirectory.maximumSocketPathBytes) a Unix socket path may have; use a shorter --data-dir"
            )
        }
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return }
        guard attributes[.type] as? FileAttributeType == .typeSocket else {
            throw MeshError(.invalidConfiguration, "\(path) exists and is not a socket; move it away")
        }
        if await ControlClient.isAnswering(socketPath: path) {
            throw MeshError(
                .nodeAlreadyRunning,
                "another node is running with data dir \(dataDirectory) (stop it, or pass another --data-dir)"
            )
        }
        unlink(path)
    }
}
