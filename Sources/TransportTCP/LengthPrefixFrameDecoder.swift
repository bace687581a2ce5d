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
            throw MeshError(
                .malformedFrame,
                "the connection ended in the middle of a frame (\(pending) bytes left over)"
            )
        }
        return .needMoreData
    }
}
