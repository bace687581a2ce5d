import HummingbirdCore
import Logging
import NIOCore

/// A server child channel that reads its socket up to ``maximumRead`` bytes at a
/// time, then sets up `Base` (Hummingbird's HTTP/1 channel) as usual.
///
/// NIO's default allocator reads at most 64 KiB per read, and each read becomes one
/// piece of a request body, handed from the event loop to the handler's task: a
/// 10 MiB upload arrived as 160–350 pieces. With larger reads a fast local client's
/// body arrives in far fewer, larger pieces (whatever the socket holds, up to the
/// maximum), and the allocator still shrinks its guess again for small requests, so
/// a connection that sends little keeps small buffers.
struct LargeReadChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    /// The channel set up after the read size.
    let base: Base
    /// The most one socket read takes, in bytes.
    let maximumRead: Int

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let allocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: maximumRead)
        return channel.setOption(ChannelOptions.recvAllocator, value: allocator).flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// Hummingbird's HTTP/1 server whose connections read up to `maximumRead` bytes at
    /// a time (``LargeReadChannel``) and close after `idleTimeout` without a request.
    static func http1(maximumRead: Int, idleTimeout: Duration) -> HTTPServerBuilder {
        .init { responder in
            LargeReadChannel(
                base: HTTP1Channel(
                    responder: responder,
                    configuration: .init(idleTimeout: .milliseconds(Int64(idleTimeout / .milliseconds(1))))
                ),
                maximumRead: maximumRead
            )
        }
    }
}
