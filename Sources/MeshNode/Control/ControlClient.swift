import Foundation
import MeshCore
import NIOCore
import NIOPosix
import Synchronization

/// Talks to a running node over its control socket (what `scmesh status`, `peers`,
/// `send` and `inbox` use).
///
/// ```swift
/// let reply = try await ControlClient(dataDirectory: dir).call(.status)
/// let status = try reply.decode(StatusReply.self)
/// ```
public struct ControlClient: Sendable {
    /// The node's data directory.
    public let dataDirectory: String
    /// Its control socket.
    public var socketPath: String { DataDirectory.controlSocketPath(dataDirectory) }

    /// Creates a client for the node using `dataDirectory`.
    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    /// Sends one request and returns the node's reply (which may be `ok: false`).
    /// - Throws: `.nodeNotRunning` when no node answers; `.controlRequestFailed` when
    ///   the reply is not a JSON object.
    public func call(_ command: NodeCommand) async throws -> ControlReply {
        try await call(command.wire)
    }

    /// Sends one request as it travels on the socket (for a client that speaks the
    /// wire form itself) and returns the node's reply (which may be `ok: false`).
    /// - Throws: `.nodeNotRunning` when no node answers; `.controlRequestFailed` when
    ///   the reply is not a JSON object.
    public func call(_ request: ControlRequest) async throws -> ControlReply {
        let line = try Array(ControlJSON.encoder().encode(request))
        return try ControlReply(line: await exchange(line))
    }

    /// Asks for the inbox listing (`cmd: inbox`), without the payloads when
    /// `payloads` is false (`"payloads": false`). A node started before that field
    /// existed refuses it as an unknown request field; the listing is then asked for
    /// again without the field, so it comes with the payloads (that node's default) instead
    /// of failing until that node restarts.
    /// - Returns: the reply (which may be `ok: false`).
    /// - Throws: `.nodeNotRunning` when no node answers; `.controlRequestFailed` when
    ///   the reply is not a JSON object.
    public func inbox(after: Int? = nil, limit: Int? = nil, payloads: Bool = true) async throws -> ControlReply {
        let reply = try await call(.inbox(InboxRequest(after: after, limit: limit, payloads: payloads ? nil : false)))
        guard !payloads, !reply.ok, reply.error?.hasPrefix(#"unknown request field "payloads""#) == true else {
            return reply
        }
        return try await call(.inbox(InboxRequest(after: after, limit: limit)))
    }

    /// Sends one raw line (a newline is appended) and returns the reply line. A node
    /// that does not answer yet is waited for (``nodeWait``; by default only while the
    /// data directory's lock shows a node starting, up to ``startingNodeWait``).
    /// - Throws: `.nodeNotRunning` when no node answers within that wait.
    public func exchange(_ line: [UInt8]) async throws -> [UInt8] {
        let clock = ContinuousClock()
        let started = clock.now
        let requested = Self.nodeWait
        while true {
            do {
                return try await exchangeOnce(line)
            } catch let error as MeshError where error.code == .nodeNotRunning {
                // Nothing was sent (no connection), so asking again cannot repeat a request.
                let starting = DataDirectoryLock.isHeld(dataDirectory: dataDirectory)
                let limit = requested ?? (starting ? Self.startingNodeWait : .zero)
                guard clock.now - started < limit else {
                    guard starting, limit > .zero else { throw error }
                    throw MeshError(
                        .nodeNotRunning,
                        "a node is starting with data dir \(dataDirectory) (it holds \(DataDirectoryLock.fileName)) but did not answer within \(Self.seconds(limit)); its log says why, or pass --wait-for-node SECONDS to wait longer",
                        cause: error
                    )
                }
                try await Task.sleep(for: Self.nodeWaitPoll)
            }
        }
    }

    /// How long a call waits by default for a node whose lock is held but whose
    /// control socket does not answer yet (it is starting).
    public static let startingNodeWait: Duration = .seconds(10)
    /// How often a waiting call tries the socket again.
    static let nodeWaitPoll: Duration = .milliseconds(50)
    private static let nodeWaitSetting = Mutex<Duration?>(nil)

    /// How long every call in this process waits for a node that does not answer yet
    /// (`scmesh --wait-for-node SECONDS`); nil waits only for a node that is starting
    /// (its lock is held), up to ``startingNodeWait``.
    public static var nodeWait: Duration? {
        get { nodeWaitSetting.withLock { $0 } }
        set { nodeWaitSetting.withLock { $0 = newValue } }
    }

    /// `10 s`, `0.5 s`.
    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// One attempt of ``exchange(_:)``.
    private func exchangeOnce(_ line: [UInt8]) async throws -> [UInt8] {
        let notRunning = MeshError(
            .nodeNotRunning,
            "no node is running with data dir \(dataDirectory) (start one with `scmesh run --data-dir \(dataDirectory)`)"
        )
        guard FileManager.default.fileExists(atPath: socketPath) else { throw notRunning }
        let connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineFrameDecoder(maximumLength: 1 << 30))
                        )
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw MeshError(notRunning.code, notRunning.message, cause: error)
        }
        let dataDirectory = dataDirectory
        return try await connection.executeThenClose { inbound, outbound in
            // Write and read at once: a node that refuses a request up front (too
            // large) replies and closes before it read everything, and that reply,
            // not the failed write, is the answer.
            try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
                let buffer = ControlServer.line(line)
                group.addTask {
                    try? await outbound.write(buffer)
                    return nil
                }
                group.addTask {
                    do {
                        for try await reply in inbound { return Array(buffer: reply) }
                    } catch {
                        throw MeshError(
                            .controlRequestFailed,
                            "the node at \(dataDirectory) dropped the connection before replying (\(Self.describe(error)))",
                            cause: error
                        )
                    }
                    return []
                }
                while let result = try await group.next() {
                    guard let reply = result else { continue }
                    group.cancelAll()
                    guard !reply.isEmpty else {
                        throw MeshError(
                            .controlRequestFailed,
                            "the node at \(dataDirectory) closed the connection without replying"
                        )
                    }
                    return reply
                }
                throw MeshError(
                    .controlRequestFailed,
                    "the node at \(dataDirectory) closed the connection without replying"
                )
            }
        }
    }

    /// A socket error in a few words, without the library's call syntax.
    static func describe(_ error: any Error) -> String {
        if let error = error as? IOError {
            return String(cString: strerror(error.errnoCode)).lowercased()
        }
        return "\(type(of: error))"
    }

    /// Whether a node accepts connections on `socketPath`.
    package static func isAnswering(socketPath: String) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: socketPath).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }
}

/// A reply from the control socket.
public struct ControlReply: Sendable {
    /// The reply exactly as the node sent it (one JSON object, no newline).
    public let line: String
    /// Whether the node did what was asked.
    public let ok: Bool
    /// The node's error message when `ok` is false (`message`; a node of the former
    /// shape wrote it as `error`).
    public let error: String?
    /// The error's code when `ok` is false (a `MeshError.Code` name).
    public let code: String?
    /// The message the failure concerns, when it has an ID (a `send` that timed out,
    /// was refused, or failed).
    public let messageID: MessageID?

    /// Parses a reply line.
    /// - Throws: `.controlRequestFailed` when it is not a JSON object with `ok`.
    public init(line: [UInt8]) throws {
        struct Envelope: Decodable {
            var ok: Bool
            var code: String?
            var message_id: String?
        }
        // A failure's text is `message` (a reply may have a `message` of its own, e.g.
        // `trace`, so it is read only from failures), or `error` in the former shape.
        struct Message: Decodable {
            var message: String
        }
        struct FormerError: Decodable {
            var error: String
        }
        self.line = String(decoding: line, as: UTF8.self)
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(line)) else {
            throw MeshError(.controlRequestFailed, "the node's reply is not a control reply: \(self.line.prefix(200))")
        }
        ok = envelope.ok
        error =
            ok
            ? nil
            : (try? JSONDecoder().decode(Message.self, from: Data(line)))?.message
                ?? (try? JSONDecoder().decode(FormerError.self, from: Data(line)))?.error
        code = envelope.code
        messageID = envelope.message_id.flatMap(MessageID.init(hex:))
    }

    /// The reply's body as `T`. A reply of a node of an earlier release, with the
    /// former field names only, is read too (``ControlJSON`` copies them to the new ones).
    /// - Throws: a `MeshError` with the node's message when `ok` is false, or a
    ///   decoding error.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard ok else {
            throw MeshError(
                code.map(MeshError.Code.init) ?? .controlRequestFailed,
                error ?? "the node refused the request"
            )
        }
        let data = Data(line.utf8)
        do {
            return try ControlJSON.decoder().decode(T.self, from: data)
        } catch DecodingError.keyNotFound(let key, let context) {
            // A node of an earlier release, still running, writes the former names only.
            guard let current = ControlJSON.withCurrentNames(data) else {
                throw DecodingError.keyNotFound(key, context)
            }
            return try ControlJSON.decoder().decode(T.self, from: current)
        }
    }
}
