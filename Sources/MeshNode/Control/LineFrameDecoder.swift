import NIOCore

/// Splits a byte stream into newline-terminated lines (without the `\n`; a trailing
/// `\r` is kept). A line longer than `maximumLength` is an error as soon as that many
/// bytes arrived without a newline, so a client cannot make the node buffer without
/// bound.
///
/// Linear in the input: each byte is scanned for the newline once, however many
/// reads a long line arrives in (`scanned` remembers how far the search got).
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    /// The peer sent more than `maximumLength` bytes without a newline.
    struct LineTooLong: Error, CustomStringConvertible {
        var maximumLength: Int
        var description: String { "request line longer than \(maximumLength) bytes" }
    }

    let maximumLength: Int
    /// Bytes after the reader index already searched for a newline.
    private var scanned = 0

    init(maximumLength: Int) {
        self.maximumLength = maximumLength
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        let start = view.startIndex + min(scanned, view.count)
        if let newline = view[start...].firstIndex(of: UInt8(ascii: "\n")) {
            let length = newline - view.startIndex
            scanned = 0
            guard length <= maximumLength else { throw LineTooLong(maximumLength: maximumLength) }
            let line = buffer.readSlice(length: length)!
            buffer.moveReaderIndex(forwardBy: 1)
            context.fireChannelRead(wrapInboundOut(line))
            return .continue
        }
        scanned = view.count
        guard buffer.readableBytes <= maximumLength else { throw LineTooLong(maximumLength: maximumLength) }
        return .needMoreData
    }

    mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0, seenEOF {
            // A last line without its newline still counts.
            scanned = 0
            context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: buffer.readableBytes)!))
        }
        return .needMoreData
    }
}
