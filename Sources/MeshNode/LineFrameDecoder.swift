import NIOCore

/// Splits a byte stream into newline-terminated lines (without the `\n`; a trailing
/// `\r` is kept). A line longer than `maximumLength` is an error, so a client cannot
/// make the node buffer without bound.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    /// The peer sent more than `maximumLength` bytes without a newline.
    struct LineTooLong: Error, CustomStringConvertible {
        var maximumLength: Int
        var description: String { "request line longer than \(maximumLength) bytes" }
    }

    let maximumLength: Int

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - buffer.readerIndex
            guard length <= maximumLength else { throw LineTooLong(maximumLength: maximumLength) }
            let line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            context.fireChannelRead(wrapInboundOut(line))
            return .continue
        }
        guard buffer.readableBytes <= maximumLength else { throw LineTooLong(maximumLength: maximumLength) }
        return .needMoreData
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0, seenEOF {
            // A last line without its newline still counts.
            context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: buffer.readableBytes)!))
        }
        return .needMoreData
    }
}
