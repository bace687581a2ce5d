import Logging
import MeshCore
import NIOCore
import Synchronization

/// One TCP connection carrying frames with a 2-byte big-endian length prefix.
///
/// Inbound, the event loop decodes frames and hands them to a bounded ``FrameInbox``
/// that ``receive()`` drains; socket reads pause while it is full. Outbound, ``send(_:)``
/// queues into a bounded ``FrameWriter`` that flushes once per batch and suspends the
/// sender while the socket is not writable. Nothing queues without bound either way,
/// and no task sits between the socket and the caller.
final class TCPLink: Link {
    /// The transport's own handle for this link (its bookkeeping and log lines).
    let id: LinkID
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
        /// The failure already handed to a receive() caller.
        var failure: MeshError?
        /// onEnded was called.
        var reported = false
    }

    /// Frames the inbox holds before socket reads pause, and where they resume.
    static let inboxWatermarks = (low: 2, high: 8)
    /// Bytes a link's ``FrameWriter`` queues before `send` waits (NIO's write buffer
    /// holds up to `TCPTransport.writeWatermarks.high` more).
    static let writeQueueLimit = 128 * 1024

    /// A channel set up for a link, before the link object exists (frames that arrive
    /// meanwhile wait in the inbox).
    struct Wrapped: Sendable {
        var id: LinkID
        var channel: any Channel
        var writer: FrameWriter
        var inbox: FrameInbox
    }

    /// Installs the framing handlers on a fresh channel. Runs on the channel's event loop
    /// (inside a bootstrap's channel initializer).
    static func wrap(
        _ channel: any Channel,
        id: LinkID,
        maxFrameSize: Int,
        logger: Logger,
        failures: LogLimiter? = nil
    ) throws -> Wrapped {
        let writer = FrameWriter(channel: channel, limit: writeQueueLimit)
        let inbox = FrameInbox(
            channel: channel,
            lowWatermark: inboxWatermarks.low,
            highWatermark: inboxWatermarks.high
        )
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(ByteToMessageHandler(LengthPrefixFrameDecoder(maxFrameSize: maxFrameSize)))
        try pipeline.addHandler(
            LinkChannelHandler(logger: logger, failures: failures, linkID: id, inbox: inbox, writer: writer)
        )
        return Wrapped(id: id, channel: channel, writer: writer, inbox: inbox)
    }

    /// Makes the link for a wrapped, connected channel. `onEnded` is called once, after
    /// the channel closed for any reason (at the latest when ``close()`` returns).
    init(_ wrapped: Wrapped, mtu: Int, onEnded: @escaping @Sendable (LinkID) -> Void) {
        self.id = wrapped.id
        self.remoteAddress = TCPAddress.text(of: wrapped.channel.remoteAddress)
        self.mtu = mtu
        self.channel = wrapped.channel
        self.writer = wrapped.writer
        self.inbox = wrapped.inbox
        self.onEnded = onEnded
    }

    /// Starts watching for the end of the channel. Called once, right after init.
    func watchForEnd(logger: Logger) {
        let id = self.id
        let remote = self.remoteAddress
        channel.closeFuture.whenComplete { _ in
            logger.debug("TCP link \(id) to \(remote) ended", metadata: ["link": "\(id)"])
            self.reportEnded()
        }
    }

    /// Tells the transport the link ended, once.
    private func reportEnded() {
        let first = state.withLock { state in
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
        guard !state.withLock({ $0.closed }) else { throw closedError() }
        var buffer = channel.allocator.buffer(capacity: frame.count + 2)
        buffer.writeInteger(UInt16(frame.count))
        buffer.writeBytes(frame)
        do {
            try await writer.write(buffer)
        } catch is FrameWriter.Closed {
            throw closedError()
        }
    }

    private func closedError() -> MeshError {
        MeshError(.linkClosed, "TCP link \(id) to \(remoteAddress) is closed; open a new link")
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
            return state.withLock { $0.closed ? nil : frame }
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
            // Frames already queued go out first: their drain is ahead of the close on
            // the event loop.
            channel.close(promise: nil)
        }
        try? await channel.closeFuture.get()
        reportEnded()
    }
}
