import Logging
import MeshCore
import NIOCore
import Synchronization

/// One TCP connection carrying frames with a 2-byte big-endian length prefix.
///
/// The NIO channel lives inside `NIOAsyncChannel.executeThenClose` in the link's reader
/// task, which moves inbound frames into a small ``FrameInbox`` as ``receive()`` drains
/// it (NIO stops reading the socket while that and its own small buffer are full).
/// Writes go through a ``FrameWriter``, which suspends while its bounded queue is full
/// or the socket is not writable, and flushes once per batch. Nothing queues without
/// bound in either direction.
final class TCPLink: Link {
    let id: LinkID
    let transportName: String
    let remoteAddress: String
    let mtu: Int

    private let channel: any Channel
    private let writer: FrameWriter
    private let inbox: FrameInbox
    private let onEnded: @Sendable (LinkID) -> Void
    private let state = Mutex(State())

    private struct State {
        /// close() was called here.
        var closed = false
        /// The inbound side ended (remote closed, failed, or close()).
        var ended = false
        /// The failure already handed to a receive() caller.
        var failure: MeshError?
        /// onEnded was called.
        var reported = false
        var stats = LinkStats()
    }

    /// Frames the reader task may hold ahead of receive() (NIO holds a few more).
    static let inboxCapacity = 4
    /// NIO's inbound back-pressure watermarks, in frames.
    static let inboundWatermarks = NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark(
        lowWatermark: 2,
        highWatermark: 8
    )

    private init(
        id: LinkID,
        transportName: String,
        remoteAddress: String,
        mtu: Int,
        channel: any Channel,
        writer: FrameWriter,
        inbox: FrameInbox,
        onEnded: @escaping @Sendable (LinkID) -> Void
    ) {
        self.id = id
        self.transportName = transportName
        self.remoteAddress = remoteAddress
        self.mtu = mtu
        self.channel = channel
        self.writer = writer
        self.inbox = inbox
        self.onEnded = onEnded
    }

    var stats: LinkStats { state.withLock { $0.stats } }

    /// Bytes a link's ``FrameWriter`` queues before `send` waits (NIO's write buffer
    /// holds up to `TCPTransport.writeWatermarks.high` more).
    static let writeQueueLimit = 128 * 1024

    /// A channel set up for a link: inbound frames through NIOAsyncChannel, outbound
    /// through a FrameWriter.
    struct Wrapped: Sendable {
        var id: LinkID
        var channel: NIOAsyncChannel<[UInt8], Never>
        var writer: FrameWriter
    }

    /// Installs the framing handlers on a fresh channel and wraps it. Runs on the
    /// channel's event loop (inside a bootstrap's channel initializer).
    static func wrap(
        _ channel: any Channel,
        id: LinkID,
        maxFrameSize: Int,
        logger: Logger
    ) throws -> Wrapped {
        let writer = FrameWriter(channel: channel, limit: writeQueueLimit)
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(ByteToMessageHandler(LengthPrefixFrameDecoder(maxFrameSize: maxFrameSize)))
        try pipeline.addHandler(LinkGuardHandler(logger: logger, linkID: id, writer: writer))
        let wrapped = try NIOAsyncChannel<[UInt8], Never>(
            wrappingChannelSynchronously: channel,
            configuration: .init(backPressureStrategy: inboundWatermarks, inboundType: [UInt8].self)
        )
        return Wrapped(id: id, channel: wrapped, writer: writer)
    }

    /// Starts the reader task of a wrapped channel and returns the link once it runs.
    /// `onEnded` is called once, after the channel closed for any reason (at the latest
    /// when ``close()`` returns).
    static func start(
        _ wrapped: Wrapped,
        transportName: String,
        mtu: Int,
        logger: Logger,
        onEnded: @escaping @Sendable (LinkID) -> Void
    ) async -> TCPLink {
        let id = wrapped.id
        let asyncChannel = wrapped.channel
        let remote = TCPAddress.text(of: asyncChannel.channel.remoteAddress)
        let inbox = FrameInbox(capacity: inboxCapacity)
        return await withCheckedContinuation { (continuation: CheckedContinuation<TCPLink, Never>) in
            Task {
                var made: TCPLink?
                do {
                    try await asyncChannel.executeThenClose { inbound in
                        let link = TCPLink(
                            id: id,
                            transportName: transportName,
                            remoteAddress: remote,
                            mtu: mtu,
                            channel: asyncChannel.channel,
                            writer: wrapped.writer,
                            inbox: inbox,
                            onEnded: onEnded
                        )
                        made = link
                        continuation.resume(returning: link)
                        await link.pump(inbound)
                    }
                } catch {
                    // executeThenClose only rethrows the body's errors; the body throws none.
                }
                logger.debug("TCP link \(id) to \(remote) ended", metadata: ["link": "\(id)"])
                made?.reportEnded()
            }
        }
    }

    /// Moves inbound frames into the inbox until the channel ends or the link closes.
    private func pump(_ inbound: NIOAsyncChannelInboundStream<[UInt8]>) async {
        do {
            for try await frame in inbound {
                guard await inbox.push(.frame(frame)) else { return }
            }
        } catch {
            let failure: MeshError
            if let error = error as? MeshError {
                failure = error
            } else {
                failure = MeshError(
                    .linkClosed,
                    "TCP connection to \(remoteAddress) failed; the router will redial if it knows the peer",
                    cause: error
                )
            }
            markEnded()
            _ = await inbox.push(.failed(failure))
        }
        markEnded()
        inbox.finish(discardBuffered: false)
    }

    private func markEnded() {
        state.withLock { $0.ended = true }
    }

    /// Marks the link ended and tells the transport, once.
    private func reportEnded() {
        let first = state.withLock { state in
            state.ended = true
            defer { state.reported = true }
            return !state.reported
        }
        if first { onEnded(id) }
    }

    func send(_ frame: [UInt8]) async throws {
        guard frame.count <= mtu else {
            throw MeshError(
                .frameTooLarge,
                "frame of \(frame.count) bytes exceeds the TCP link MTU of \(mtu); split it before sending"
            )
        }
        let usable = state.withLock { !$0.closed && !$0.ended }
        guard usable else { throw closedError() }
        var buffer = channel.allocator.buffer(capacity: frame.count + 2)
        buffer.writeInteger(UInt16(frame.count))
        buffer.writeBytes(frame)
        do {
            try await writer.write(buffer)
        } catch is FrameWriter.Closed {
            throw closedError()
        }
        state.withLock { $0.stats.recordSent(frame.count) }
    }

    private func closedError(cause: (any Error)? = nil) -> MeshError {
        MeshError(.linkClosed, "TCP link \(id) to \(remoteAddress) is closed; open a new link", cause: cause)
    }

    func receive() async throws -> [UInt8]? {
        let early: Result<[UInt8]?, MeshError>? = state.withLock { state in
            if state.closed { return .success(nil) }
            if let failure = state.failure { return .failure(failure) }
            return nil
        }
        if let early { return try early.get() }
        guard let item = try await inbox.pop() else { return nil }
        switch item {
        case .frame(let frame):
            return state.withLock { state in
                if state.closed { return nil }
                state.stats.recordReceived(frame.count)
                return frame
            }
        case .failed(let failure):
            let closed = state.withLock { state in
                state.failure = failure
                return state.closed
            }
            if closed { return nil }
            throw failure
        }
    }

    func close() async {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if first {
            inbox.finish(discardBuffered: true)
            // Frames already queued are written first: their drain is ahead of the close
            // on the event loop.
            channel.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        reportEnded()
    }
}
