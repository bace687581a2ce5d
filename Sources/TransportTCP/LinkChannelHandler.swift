import Logging
import MeshCore
import NIOCore

/// Sits after the frame decoder and connects the channel to the link: frames go into the
/// link's ``FrameInbox`` (socket reads are held back while it is full), writability and
/// the end of the channel go to its ``FrameWriter``. On any error it logs one line saying
/// why the link is being closed, hands the error to the reader and closes the channel.
final class LinkChannelHandler: ChannelDuplexHandler {
    typealias InboundIn = [UInt8]
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let logger: Logger
    /// Rate-limits the closing line (a remote can make links fail at will); nil logs each.
    private let failures: LogLimiter?
    private let linkID: LinkID
    private let inbox: FrameInbox
    private let writer: FrameWriter
    /// An error was already reported; later ones (echoes of the first) are ignored.
    private var failed = false

    init(logger: Logger, failures: LogLimiter? = nil, linkID: LinkID, inbox: FrameInbox, writer: FrameWriter) {
        self.logger = logger
        self.failures = failures
        self.linkID = linkID
        self.inbox = inbox
        self.writer = writer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inbox.offer(.frame(Self.unwrapInboundIn(data)))
    }

    func read(context: ChannelHandlerContext) {
        // Back-pressure: no socket read while the inbox is full. FrameInbox issues a
        // new read once the consumer drained it.
        if !inbox.isReadingPaused { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        writer.setWritable(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        writer.close()
        inbox.finish(discardBuffered: false)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !failed else { return }
        failed = true
        let remote = TCPAddress.text(of: context.channel.remoteAddress)
        let failure: MeshError
        if let error = error as? MeshError {
            failure = error
        } else if let error = error as? IOError {
            failure = MeshError(
                .linkClosed,
                "TCP connection to \(remote) failed: \(TCPTransport.reason(error))",
                cause: error
            )
        } else {
            failure = MeshError(.linkClosed, "TCP connection to \(remote) failed: \(error)", cause: error)
        }
        if let failures {
            let kind = "link_closed.\(failure.code.name)"
            failures.note(kind, level: .notice, "closing TCP link \(linkID) to \(remote): \(failure.message)") {
                "closed \(LogLimiter.formatted($0)) more TCP links in the last \(LogLimiter.formatted($1)): \(kind)"
            }
        } else {
            logger.notice(
                "closing TCP link \(linkID) to \(remote): \(failure.message)",
                metadata: ["link": "\(linkID)", "remote": "\(remote)"]
            )
        }
        inbox.offer(.failed(failure))
        context.close(promise: nil)
    }
}
