/// Where the router hands every complete, verified message for this node: the
/// in-memory inbox today, a durable store or a relay queue next.
///
/// Custody rule: the router acknowledges the hop that brought a message only after
/// ``accept(_:)`` returned. A sink that throws refuses the message: the hop is not
/// acknowledged, so the sender retries or escalates and nothing is lost; a later copy
/// of the same message is offered again. A sink that throws a ``MeshError`` with code
/// ``MeshError/Code/discarded`` took the message and threw it away on purpose (a
/// blocked sender): the hop is acknowledged, so nobody retries, but no delivery receipt
/// goes back, so the sender never sees it delivered.
public protocol MessageSink: Sendable {
    /// Takes custody of `message`. Returns once it is safely kept (stored durably, for
    /// a durable sink).
    /// - Throws: to refuse it (full, closed, failing storage); say why in a
    ///   ``MeshError``.
    func accept(_ message: InboundMessage) async throws
}

/// The default sink: a ``BoundedChannel`` that the application reads
/// (``Router/incoming``). A full channel slows the links down; a finished one refuses.
public struct ChannelSink: MessageSink {
    /// The channel messages go to.
    public let channel: BoundedChannel<InboundMessage>

    /// Creates a sink that sends into `channel`.
    public init(channel: BoundedChannel<InboundMessage>) {
        self.channel = channel
    }

    public func accept(_ message: InboundMessage) async throws {
        guard await channel.send(message) else {
            throw MeshError(.notRunning, "the inbox channel is closed; message \(message.id) was not taken")
        }
    }
}
