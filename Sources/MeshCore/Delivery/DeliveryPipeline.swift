import Logging

/// The outbound half of delivery: seals, queues, chunks and sends each message over
/// the best link to its destination, escalating to the next link on error or ack
/// timeout, and records every step in the ``OutboundQueue``.
final class DeliveryPipeline: Sendable {
    let localPeerID: PeerID
    let configuration: RouterConfiguration
    let policy: any RoutingPolicy
    let sealer: (any MessageSealer)?
    let queue: any OutboundQueue
    let sink: any MessageSink
    let table: LinkTable
    let paths: PathTracker
    let clock: any MeshClock
    let stats: StatsRecorder
    let bus: EventBus
    let logger: Logger

    init(
        localPeerID: PeerID, configuration: RouterConfiguration, policy: any RoutingPolicy, sealer: (any MessageSealer)?,
        queue: any OutboundQueue, sink: any MessageSink, table: LinkTable, paths: PathTracker, clock: any MeshClock,
        stats: StatsRecorder, bus: EventBus, logger: Logger
    ) {
        self.localPeerID = localPeerID
        self.configuration = configuration
        self.policy = policy
        self.sealer = sealer
        self.queue = queue
        self.sink = sink
        self.table = table
        self.paths = paths
        self.clock = clock
        self.stats = stats
        self.bus = bus
        self.logger = logger
    }

    // MARK: Submitting

    /// Queues a message and sends it; returns once the next hop acknowledged it.
    func submit(to peer: PeerID, payload: [UInt8]) async throws -> MessageID {
        guard configuration.relayEnabled else {
            throw MeshError(.relayDisabled, "relaying is switched off, so this node neither sends nor receives (set relay.enabled: true)")
        }
        guard payload.count <= configuration.maxMessageSize else {
            throw MeshError(.messageTooLarge, "message of \(payload.count) bytes exceeds max message size \(configuration.maxMessageSize)")
        }
        let id = MessageID.random()
        if peer == localPeerID {
            try await sink.accept(InboundMessage(id: id, from: localPeerID, payload: payload, transport: "local"))
            stats.countMessageSent()
            return id
        }
        guard !table.sessions(to: peer).isEmpty else {
            throw MeshError(.noRoute, "no live link to peer \(peer); the message was not sent")
        }
        var payload = payload
        var flags: UInt16 = 0
        if let sealer, configuration.sealing == .always {
            // With `.relayedOnly` (the default) a message sent straight to its
            // destination over an authenticated link is protected end to end by the
            // link's Noise session already; the envelope's public-key work is spent
            // only where a relay would carry the message.
            flags |= DataFrame.sealedFlag
            payload = try sealer.seal(payload, to: peer)
            guard payload.count <= configuration.maxMessageSize else {
                throw MeshError(.messageTooLarge, "sealed message of \(payload.count) bytes exceeds max message size \(configuration.maxMessageSize)")
            }
        }
        try await queue.enqueue(OutboundMessage(id: id, destination: peer, payload: payload, flags: flags))
        bus.emit(.message(.messageQueued, id: id, peer: peer))
        guard let message = await queue.claim(id) else {
            throw MeshError(.deliveryFailed, "message \(id) left the outbound queue before it was sent")
        }
        try await transmit(message)
        return id
    }

    /// Sends the queued messages for `peer` that nobody is sending (a link to it came up).
    func drain(to peer: PeerID) async {
        for id in await queue.waiting(for: peer) {
            guard let message = await queue.claim(id) else { continue }
            do {
                try await transmit(message)
            } catch {
                logger.debug("queued message \(id) to \(peer) not sent: \(error)")
            }
        }
    }

    /// Sends every chunk of a claimed message and records the outcome.
    private func transmit(_ message: OutboundMessage) async throws {
        let peer = message.destination
        let count = DataFrame.chunkCount(messageLength: message.payload.count)
        func chunk(_ index: Int) -> DataFrame {
            let start = index * Frame.chunkSize
            let end = min(message.payload.count, start + Frame.chunkSize)
            return DataFrame(
                sequence: 0, messageID: message.id, origin: localPeerID, destination: peer, ttl: configuration.defaultTTL,
                chunkIndex: UInt16(index), chunkCount: UInt16(count), messageLength: UInt32(message.payload.count),
                flags: message.flags, payload: count == 1 ? message.payload : Array(message.payload[start..<end]))
        }
        let transport: String
        do {
            if count == 1 {
                transport = try await deliver(chunk(0), to: peer)
            } else {
                transport = try await withThrowingTaskGroup(of: String.self) { group in
                    for index in 0..<count {
                        let frame = chunk(index)
                        group.addTask { try await self.deliver(frame, to: peer) }
                    }
                    var last = ""
                    for try await used in group { last = used }
                    return last
                }
            }
        } catch {
            let reason = (error as? MeshError)?.message ?? "\(error)"
            await queue.update(message.id, to: .failed, transport: nil, reason: reason)
            bus.emit(.message(.messageFailed, id: message.id, peer: peer, reason: reason))
            throw error
        }
        stats.countMessageSent()
        // The next hop is the destination itself: its hop acknowledgement means its
        // sink took custody, so the message is delivered.
        await queue.update(message.id, to: .delivered, transport: transport, reason: nil)
        bus.emit(.message(.messageSent, id: message.id, peer: peer, transport: transport))
        bus.emit(.message(.messageDelivered, id: message.id, peer: peer, transport: transport))
    }
}
