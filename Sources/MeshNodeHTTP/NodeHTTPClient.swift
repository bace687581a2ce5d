import Foundation
import MeshCore
import MeshNode
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP/1.1 client for a node's own API on this machine (what `scmesh send -`,
/// `scmesh inbox --save` and `scmesh dashboard` use): one request per connection, the
/// bearer token from `DATA-DIR/api.token`.
public struct NodeHTTPClient: Sendable {
    /// The API's `host:port` (as `scmesh status` shows it).
    public let address: String
    /// The bearer token.
    public let token: String

    /// One reply.
    public struct Reply: Sendable {
        /// The HTTP status code.
        public var status: Int
        /// The body.
        public var body: [UInt8]
        /// The response headers, in order.
        public var headers: [(name: String, value: String)] = []

        /// The first header named `name` (case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// A client for `address` with `token`.
    public init(address: String, token: String) {
        self.address = address
        self.token = token
    }

    /// The client for the node using `dataDirectory`: its HTTP address from `status`
    /// over the control socket, its token from the token file. Nil when the node
    /// serves no HTTP API.
    /// - Throws: what the control socket throws (`.nodeNotRunning`).
    public static func forNode(dataDirectory: String) async throws -> NodeHTTPClient? {
        // The address file the server writes saves the `status` round trip; it counts
        // only while the node answers on its control socket (a killed node leaves it).
        if let address = APIAddress.read(dataDirectory: dataDirectory),
            let token = try? APIToken.load(dataDirectory: dataDirectory),
            await ControlClient.isAnswering(socketPath: DataDirectory.controlSocketPath(dataDirectory))
        {
            return NodeHTTPClient(address: address, token: token)
        }
        let status = try await ControlClient(dataDirectory: dataDirectory).call(.status).decode(StatusReply.self)
        guard let address = status.httpAddress, let token = try? APIToken.load(dataDirectory: dataDirectory) else {
            return nil
        }
        return NodeHTTPClient(address: address, token: token)
    }

    /// Sends one request and reads the whole reply (`authorize: false` sends no token).
    /// - Throws: `.nodeNotRunning` when nothing answers at ``address``.
    public func request(
        _ method: HTTPMethod,
        _ target: String,
        contentType: String? = nil,
        body: ByteBuffer? = nil,
        headers extra: [(String, String)] = [],
        authorize: Bool = true
    ) async throws -> Reply {
        try await request(
            method,
            target,
            contentType: contentType,
            body: body.map(Body.buffer),
            headers: extra,
            authorize: authorize
        )
    }

    /// A request body: bytes in memory, or `length` bytes read from a file descriptor
    /// while they are sent (so reading and uploading overlap).
    enum Body {
        case buffer(ByteBuffer)
        case stream(descriptor: Int32, length: Int, progress: @Sendable (Int) -> Void)

        var length: Int {
            switch self {
            case .buffer(let buffer): buffer.readableBytes
            case .stream(_, let length, _): length
            }
        }

        /// A handle on a `.stream` body's file, for `sendfile`: nil for a body in memory,
        /// or when the descriptor has no offset (a pipe). The caller closes it once the
        /// request is over (NIO may still hold its regions until the connection closes).
        func sendableFile() -> NIOFileHandle? {
            // A pipe or a socket has no offset (ESPIPE).
            guard case .stream(let descriptor, _, _) = self, lseek(descriptor, 0, SEEK_CUR) >= 0 else { return nil }
            let duplicate = dup(descriptor)
            guard duplicate >= 0 else { return nil }
            return NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: duplicate)
        }

        /// Writes the body: a `.stream` from a regular file (`file`, from
        /// ``sendableFile()``) as file regions that the kernel sends itself
        /// (`sendfile`: the bytes never pass through this process), else read and
        /// written in pieces of 1 MiB.
        func write(to outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>, file: NIOFileHandle?) async throws
        {
            switch self {
            case .buffer(let buffer):
                if buffer.readableBytes > 0 { try await outbound.write(.body(.byteBuffer(buffer))) }
            case .stream(let descriptor, let length, let progress):
                if let file {
                    let start = Int(lseek(descriptor, 0, SEEK_CUR))
                    var sent = 0
                    while sent < length {
                        let piece = min(length - sent, 1 << 20)
                        // A file that shrank: the node sees a short body and queues
                        // nothing (a region past the end would never be written).
                        var last: UInt8 = 0
                        guard pread(descriptor, &last, 1, off_t(start + sent + piece - 1)) == 1 else { return }
                        try await outbound.write(
                            .body(
                                .fileRegion(
                                    FileRegion(
                                        fileHandle: file,
                                        readerIndex: start + sent,
                                        endIndex: start + sent + piece
                                    )
                                )
                            )
                        )
                        sent += piece
                        progress(sent)
                    }
                    return
                }
                var sent = 0
                while sent < length {
                    var chunk = ByteBufferAllocator().buffer(capacity: min(length - sent, 1 << 20))
                    let count = chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { target in
                        while true {
                            let count = read(descriptor, target.baseAddress, min(target.count, length - sent))
                            if count >= 0 || errno != EINTR { return count }
                        }
                    }
                    // A file that shrank or failed: the node sees a short body and
                    // queues nothing.
                    guard count > 0 else { return }
                    sent += count
                    try await outbound.write(.body(.byteBuffer(chunk)))
                    progress(sent)
                }
            }
        }
    }

    /// A connection to ``address`` for one request.
    /// - Throws: `.nodeNotRunning` when nothing answers there.
    private func connect() async throws -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        let (host, port) = try Self.split(address)
        do {
            return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                            wrappingChannelSynchronously: channel
                        )
                    }
                }
        } catch {
            throw MeshError(.nodeNotRunning, "nothing answers HTTP at \(address): \(error)", cause: error)
        }
    }

    /// A request head with the token (unless `authorize` is false) and `Connection: close`.
    private func head(
        _ method: HTTPMethod,
        _ target: String,
        contentLength: Int,
        contentType: String?,
        headers extra: [(String, String)],
        authorize: Bool
    ) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: address)
        if authorize { headers.add(name: "Authorization", value: "Bearer \(token)") }
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Content-Length", value: String(contentLength))
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        for (name, value) in extra { headers.add(name: name, value: value) }
        return HTTPRequestHead(version: .http1_1, method: method, uri: target, headers: headers)
    }

    func request(
        _ method: HTTPMethod,
        _ target: String,
        contentType: String?,
        body: Body?,
        headers extra: [(String, String)],
        authorize: Bool
    ) async throws -> Reply {
        let channel = try await connect()
        let head = head(
            method,
            target,
            contentLength: body?.length ?? 0,
            contentType: contentType,
            headers: extra,
            authorize: authorize
        )
        let address = address
        let file = body?.sendableFile()
        defer { try? file?.close() }
        return try await channel.executeThenClose { inbound, outbound in
            // Write and read at once: a node that refuses a body up front (too large)
            // replies and closes before it read everything, and that reply, not the
            // failed write, is the answer.
            try await withThrowingTaskGroup(of: Reply?.self) { group in
                group.addTask {
                    try? await outbound.write(.head(head))
                    do {
                        try await body?.write(to: outbound, file: file)
                        try? await outbound.write(.end(nil))
                    } catch {
                        // The node stopped reading (it refused the body); its reply is the answer.
                    }
                    return nil
                }
                group.addTask { try await Self.readReply(inbound, from: address) }
                while let result = try await group.next() {
                    guard let reply = result else { continue }
                    group.cancelAll()
                    return reply
                }
                throw MeshError(.controlRequestFailed, "the node at \(address) closed the connection without replying")
            }
        }
    }

    /// A `GET` of `target` whose body, when the status is 200, goes to `write` piece by
    /// piece as it arrives: the next piece is read only once `write` returned, so the
    /// body is never whole in memory (the reply's ``Reply/body`` is then empty). The
    /// body of any other status (an API error, small) is collected into the reply.
    ///
    /// ```swift
    /// let reply = try await client.download("/api/v1/inbox/7/payload") { piece in
    ///     try handle.write(contentsOf: Array(buffer: piece))
    /// }
    /// ```
    /// - Throws: `.nodeNotRunning` when nothing answers at ``address``;
    ///   `.controlRequestFailed` when the connection ends before the reply does; what
    ///   `write` throws.
    public func download(_ target: String, write: (ByteBuffer) async throws -> Void) async throws -> Reply {
        let channel = try await connect()
        let head = head(.GET, target, contentLength: 0, contentType: nil, headers: [], authorize: true)
        let address = address
        /// What `write` threw, told apart from what the connection threw.
        struct WriteFailure: Error {
            var error: any Error
        }
        return try await channel.executeThenClose { inbound, outbound in
            // A failed write (the node closed first) shows in what is read.
            try? await outbound.write(.head(head))
            try? await outbound.write(.end(nil))
            var received = 0
            var errorBody: [UInt8] = []
            do {
                let reply = try await Self.readParts(inbound) { status, piece in
                    received += piece.readableBytes
                    if status == 200 {
                        do { try await write(piece) } catch { throw WriteFailure(error: error) }
                    } else {
                        errorBody += Array(buffer: piece)
                    }
                }
                if var reply {
                    reply.body = errorBody
                    return reply
                }
            } catch let failure as WriteFailure {
                throw failure.error
            } catch let error as IOError {
                throw Self.brokenOff(
                    address,
                    received,
                    reason: String(cString: strerror(error.errnoCode)).lowercased(),
                    cause: error
                )
            } catch {
                throw Self.brokenOff(address, received, reason: "\(error)", cause: error)
            }
            throw Self.brokenOff(address, received, reason: "the connection closed", cause: nil)
        }
    }

    private static func brokenOff(_ address: String, _ received: Int, reason: String, cause: (any Error)?) -> MeshError
    {
        MeshError(
            .controlRequestFailed,
            "the reply of the node's HTTP API at \(address) broke off after \(received) bytes (\(reason))",
            cause: cause
        )
    }

    private static func readReply(
        _ inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>,
        from address: String
    ) async throws -> Reply {
        var collected = ByteBuffer()
        guard
            var reply = try await readParts(
                inbound,
                body: { _, piece in
                    var piece = piece
                    collected.writeBuffer(&piece)
                }
            )
        else {
            throw MeshError(
                .controlRequestFailed,
                "the node at \(address) closed the connection before its reply ended"
            )
        }
        reply.body = Array(buffer: collected)
        return reply
    }

    /// Reads one reply: its status and headers, then each piece of its body to `body`
    /// (with the status) as it arrives, until its end. Returns the reply without a
    /// body; nil when the connection ended first.
    private static func readParts(
        _ inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>,
        body: (Int, ByteBuffer) async throws -> Void
    ) async throws -> Reply? {
        var reply = Reply(status: 0, body: [])
        for try await part in inbound {
            switch part {
            case .head(let responseHead):
                reply.status = Int(responseHead.status.code)
                reply.headers = responseHead.headers.map { (name: $0.name, value: $0.value) }
            case .body(let piece): try await body(reply.status, piece)
            case .end: return reply
            }
        }
        return nil
    }
}
