import Logging
import MeshCore
import NIOCore

/// Splits the byte stream into frames: each frame is a 2-byte big-endian length and
/// that many bytes (the framing the Noise specification recommends). Zero-length frames
/// are allowed. A length over `maxFrameSize`, or a stream that ends inside a frame,
/// is an error (`MeshError` `.malformedFrame`).
struct LengthPrefixFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    let maxFrameSize: Int

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) else {
            return .needMoreData
        }
        let size = Int(length)
        guard size <= maxFrameSize else {
            throw MeshError(
                .malformedFrame,
                "remote announced a \(size)-byte frame, over this link's max_frame_size of \(maxFrameSize)"
            )
        }
        guard buffer.readableBytes >= 2 + size else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        let frame = buffer.readBytes(length: size) ?? []
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if seenEOF && buffer.readableBytes > 0 {
            let pending = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: pending)
            throw MeshError(.malformedFrame, "remote closed the connection in the middle of a frame (\(pending) bytes left over)")
        }
        return .needMoreData
    }
}

/// Sits after the frame decoder and connects the channel to the link: frames go into the
/// link's ``FrameInbox`` (socket reads are held back while it is full), writability and
/// the end of the channel go to its ``FrameWriter``. On any error it logs one line saying
/// why the link is being closed, hands the error to the reader and closes the channel.
final class LinkChannelHandler: ChannelDuplexHandler, Sendable {
    typealias InboundIn = [UInt8]
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let logger: Logger
    private let linkID: LinkID
    private let inbox: FrameInbox
    private let writer: FrameWriter

    init(logger: Logger, linkID: LinkID, inbox: FrameInbox, writer: FrameWriter) {
        self.logger = logger
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
        let remote = TCPAddress.text(of: context.channel.remoteAddress)
        let failure: MeshError
        if let error = error as? MeshError {
            failure = error
        } else if let error = error as? IOError {
            failure = MeshError(
                .linkClosed,
                "TCP connection to \(remote) failed: \(error.description)",
                cause: error
            )
        } else {
            failure = MeshError(.linkClosed, "TCP connection to \(remote) failed: \(error)", cause: error)
        }
        logger.notice(
            "closing TCP link \(linkID) to \(remote): \(failure.message)",
            metadata: ["link": "\(linkID)", "remote": "\(remote)"]
        )
        inbox.offer(.failed(failure))
        context.close(promise: nil)
    }
}
