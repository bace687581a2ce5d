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
    /// Takes custody of `message` and queues `receipt`, its delivery receipt for the
    /// sender, in `queue`: in one step where the sink can (a durable sink whose store
    /// also holds `queue` commits both in one transaction), so a message costs one
    /// commit. Returns once both are kept. A receipt that `queue` holds unfinished
    /// already (the sender's retry of a message stored before) is not queued again; a
    /// finished one starts over. The default calls ``accept(_:)``, then
    /// ``OutboundQueue/enqueue(_:)``.
    /// - Throws: as ``accept(_:)`` (`.discarded`: taken and thrown away, no receipt
    ///   queued), or what `queue` threw; the hop is then not acknowledged.
    func accept(_ message: InboundMessage, queueing receipt: OutboundMessage, in queue: any OutboundQueue) async throws
}

extension MessageSink {
    /// Two steps: ``accept(_:)``, then the receipt into `queue` unless it waits there
    /// already.
    public func accept(
        _ message: InboundMessage,
        queueing receipt: OutboundMessage,
        in queue: any OutboundQueue
    ) async throws {
        try await accept(message)
        try await queue.enqueueReceipt(receipt)
    }
}

extension OutboundQueue {
    /// Queues a delivery receipt unless the queue holds it unfinished already (a
    /// receipt's ID is derived from its message's, so a second copy of the message
    /// issues the same receipt).
    public func enqueueReceipt(_ receipt: OutboundMessage) async throws {
        if let existing = await record(receipt.id), !existing.status.isFinal { return }
        try await enqueue(receipt)
    }
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
