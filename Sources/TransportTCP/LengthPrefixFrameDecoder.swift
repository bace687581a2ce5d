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

/// Sits after the frame decoder: on any error it logs one line saying why the link is
/// being closed, passes the error on (so the link's reader sees it) and closes the
/// channel. It also tells the link's ``FrameWriter`` about writability and the end.
final class LinkGuardHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = [UInt8]
    typealias InboundOut = [UInt8]

    private let logger: Logger
    private let linkID: LinkID
    private let writer: FrameWriter

    init(logger: Logger, linkID: LinkID, writer: FrameWriter) {
        self.logger = logger
        self.linkID = linkID
        self.writer = writer
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        writer.setWritable(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        writer.close()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let remote = TCPAddress.text(of: context.channel.remoteAddress)
        let reason: String
        if let error = error as? MeshError {
            reason = error.message
        } else if let error = error as? IOError {
            reason = "socket error: \(error.description)"
        } else {
            reason = "\(error)"
        }
        logger.notice(
            "closing TCP link \(linkID) to \(remote): \(reason)",
            metadata: ["link": "\(linkID)", "remote": "\(remote)"]
        )
        // Fire first so the reader gets the error rather than a clean end of stream.
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }
}
