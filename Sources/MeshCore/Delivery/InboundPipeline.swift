import DequeModule
import Logging
import Synchronization

/// The inbound half of delivery: checks a DATA frame, drops duplicates, reassembles
/// chunks, opens sealed envelopes and hands the complete message to the
/// ``MessageSink``. Its answer decides the hop acknowledgement: a message is
/// acknowledged only once the sink took custody of it and its delivery receipt is
/// queued. Receipts for this node's own messages go to the ``DeliveryPipeline``.
final class InboundPipeline: Sendable {
    struct State {
        var dedup: DedupCache
        var assembler: MessageAssembler
        /// Complete messages being handed to the sink or the relay queue, by origin
        /// and ID: a second copy arriving meanwhile is refused (not acknowledged), so it
        /// is retried and then dropped as a duplicate, never delivered twice. Another
        /// origin's message with the same ID is another message (as in ``DedupCache``).
        var handingOver: Set<DedupCache.Key> = []
        /// The neighbour each recently relayed message came from, and the TTL it came
        /// with: the same message coming back from another neighbour, or from that one
        /// with a lower TTL, is a loop, not a retry.
        var relayedFrom: [MessageID: (peer: PeerID, ttl: UInt8)] = [:]
        var relayedOrder = Deque<MessageID>()
    }

    let localPeerID: PeerID
    let configuration: RouterConfiguration
    let sealer: (any MessageSealer)?
    let sink: any MessageSink
    let delivery: DeliveryPipeline
    let clock: any MeshClock
    let stats: StatsRecorder
    let bus: EventBus
    let logger: Logger
    let remoteLog: LogLimiter
    let state: Mutex<State>

    init(
        localPeerID: PeerID,
        configuration: RouterConfiguration,
        sealer: (any MessageSealer)?,
        sink: any MessageSink,
        delivery: DeliveryPipeline,
        clock: any MeshClock,
        stats: StatsRecorder,
        bus: EventBus,
        logger: Logger,
        remoteLog: LogLimiter
    ) {
        self.localPeerID = localPeerID
        self.configuration = configuration
        self.sealer = sealer
        self.sink = sink
        self.delivery = delivery
        self.clock = clock
        self.stats = stats
        self.bus = bus
        self.logger = logger
        self.remoteLog = remoteLog
        self.state = Mutex(
            State(
                dedup: DedupCache(capacity: configuration.dedupCapacity),
                assembler: MessageAssembler(limits: configuration.reassembly)
            )
        )
    }

    private enum Step {
        case answer(LinkSession.AcceptResult)
        /// Complete, and this copy now holds the hand-over.
        case complete([UInt8])
        /// Complete, but another copy is being handed to the sink right now.
        case busy([UInt8])
    }

    /// What ``gather(_:from:checkingDedup:)`` made of one chunk.
    enum Gathered {
        /// The answer for the link (stored, duplicate chunk, refused, busy).
        case answer(LinkSession.AcceptResult)
        /// The whole message; this copy now holds its hand-over.
        case complete([UInt8])
    }

    /// Adds one DATA frame to the reassembler (a one-chunk message is complete at once)
    /// and counts it; the same for messages to this node and messages to relay.
    /// - Parameter checkingDedup: drop the frame as a duplicate when its message ID is
    ///   in the duplicate cache (messages to this node; a relay asks its queue instead).
    func gather(_ frame: DataFrame, from session: LinkSession, checkingDedup: Bool) -> Gathered {
        let now = clock.now
        let step: Step = state.withLock { state in
            if checkingDedup, state.dedup.contains(frame.messageID, from: frame.origin) { return .answer(.duplicate) }
            func handOver(_ bytes: [UInt8]) -> Step {
                state.handingOver.insert(frame.handOverKey).inserted ? .complete(bytes) : .busy(bytes)
            }
            if frame.chunkCount == 1 { return handOver(frame.payload) }
            switch state.assembler.add(frame, from: session.remote, now: now) {
            case .complete(let bytes): return handOver(bytes)
            case .incomplete: return .answer(.accepted)
            case .duplicateChunk: return .answer(.duplicate)
            case .rejected(let reason):
                logger.debug("refusing chunk of \(frame.messageID) from \(frame.origin): \(reason)")
                return .answer(.refused)
            }
        }
        switch step {
        case .answer(let result):
            switch result {
            case .duplicate: stats.update { $0.duplicatesDropped += 1 }
            case .refused: stats.update { $0.framesRefused += 1 }
            case .accepted: session.data.countReceived(frame.payload.count)
            }
            return .answer(result)
        case .busy(let bytes):
            session.data.countReceived(frame.payload.count)
            return .answer(reopen(frame, bytes, from: session.remote, result: .refused))
        case .complete(let bytes):
            session.data.countReceived(frame.payload.count)
            return .complete(bytes)
        }
    }

    /// Takes one DATA frame that arrived on `session`.
    func accept(_ frame: DataFrame, from session: LinkSession) async -> LinkSession.AcceptResult {
        guard delivery.relay.isEnabled else {
            // Relay off: the node neither sends, nor receives, nor relays. Refused, so
            // the message waits at the sender.
            stats.update {
                $0.framesRefused += 1
                if frame.destination != localPeerID { $0.relayRefused["relayOff", default: 0] += 1 }
            }
            return .refused
        }
        if frame.destination != localPeerID { return await relay(frame, from: session) }
        let payload: [UInt8]
        switch gather(frame, from: session, checkingDedup: true) {
        case .answer(let result): return result
        case .complete(let bytes): payload = bytes
        }
        let isReceipt = frame.flags & DataFrame.receiptFlag != 0
        if isReceipt && frame.flags & DataFrame.sealedFlag == 0 {
            // A receipt for a message of ours: its signature is its authentication, so
            // it is checked by the delivery pipeline, never handed to the sink. Its ID
            // is remembered only once that signature verified: else anyone linked to
            // this node could squat the ID of a message or receipt still to come.
            let authentic = await delivery.acceptReceipt(payload, from: frame.origin, transport: session.transport)
            finishHandOver(frame, remembering: authentic)
            return .accepted
        }
        guard let opened = open(frame, payload, session: session) else {
            // Forged or unreadable: acknowledged (it arrived), never delivered, and its
            // ID not marked as seen — else a relay that altered one copy could make the
            // destination drop the genuine one as a duplicate (PROTOCOL §A.6).
            state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
            return .accepted
        }
        if isReceipt {
            // A receipt sealed for the relays that carried it back.
            let authentic = await delivery.acceptReceipt(opened, from: frame.origin, transport: session.transport)
            finishHandOver(frame, remembering: authentic)
            return .accepted
        }
        let message = InboundMessage(
            id: frame.messageID,
            from: frame.origin,
            payload: opened,
            transport: session.transport,
            emergency: frame.flags & DataFrame.emergencyFlag != 0,
            sentMillis: frame.flags & DataFrame.sealedFlag != 0 ? sealer?.sealedAtMillis(payload) : nil
        )
        let receipt: OutboundMessage?
        do {
            receipt = try delivery.makeReceipt(for: frame.messageID, from: frame.origin, content: opened)
        } catch {
            stats.update { $0.sinkRefusals += 1 }
            logger.debug("the receipt for \(frame.messageID) from \(frame.origin) could not be made: \(error)")
            state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
            return reopen(frame, payload, from: session.remote, result: .refused)
        }
        do {
            // The receipt is queued with the message (one commit in a durable store),
            // before the hop is acknowledged: if the node dies first, the sender
            // retries, the sink recognises the copy and the receipt is issued again.
            if let receipt {
                try await sink.accept(message, queueing: receipt, in: delivery.queue)
            } else {
                try await sink.accept(message)
            }
        } catch let error as MeshError where error.code == .discarded {
            // Taken and thrown away on purpose: acknowledged (no retry), no receipt.
            stats.update { $0.sinkDiscards += 1 }
            finishHandOver(frame)
            return .accepted
        } catch {
            stats.update { $0.sinkRefusals += 1 }
            logger.debug("the message sink refused \(frame.messageID) from \(frame.origin): \(error)")
            state.withLock { _ = $0.handingOver.remove(frame.handOverKey) }
            return reopen(frame, payload, from: session.remote, result: .refused)
        }
        if let receipt { delivery.receiptQueued(receipt) }
        finishHandOver(frame)
        stats.countMessageReceived()
        bus.emit(.message(.messageReceived, id: frame.messageID, peer: frame.origin, transport: session.transport))
        return .accepted
    }

    /// Ends the hand-over of a message: later copies from the same origin are
    /// duplicates, unless `remembering` is false (the message did not verify).
    private func finishHandOver(_ frame: DataFrame, remembering: Bool = true) {
        state.withLock { state in
            state.handingOver.remove(frame.handOverKey)
            if remembering { state.dedup.insert(frame.messageID, from: frame.origin) }
        }
    }

    /// Puts a refused multi-chunk message back, missing only `frame`'s chunk, so the
    /// sender's retry of that chunk completes it again.
    func reopen(
        _ frame: DataFrame,
        _ payload: [UInt8],
        from neighbour: PeerID,
        result: LinkSession.AcceptResult
    ) -> LinkSession.AcceptResult {
        guard frame.chunkCount > 1 else { return result }
        let now = clock.now
        state.withLock { $0.assembler.reopen(frame, completed: payload, from: neighbour, now: now) }
        return result
    }

    /// Checks, as a relay, that a sealed message was sealed by its origin for this
    /// frame's ID and flags, before any of the origin's budget is spent on it; a
    /// failure is counted and reported like an envelope that does not open. True
    /// without a sealer (nothing to check with).
    func verifyRelayed(_ frame: DataFrame, _ payload: [UInt8], session: LinkSession) -> Bool {
        guard let sealer else { return true }
        // No format rule here: an origin seals format 1 to a destination it knows does
        // not speak format 2, which a relay cannot tell from a replay.
        do {
            try sealer.verify(
                payload,
                from: frame.origin,
                binding: SealBinding(messageID: frame.messageID, flags: frame.flags)
            )
            return true
        } catch {
            rejectEnvelope(frame, error, session: session)
            return false
        }
    }

    /// The format rules of docs/PROTOCOL.md §B.3, checked before an envelope addressed
    /// to this node is opened: format 2 only at a node that announces `sealed_v2`, and format 1
    /// never from an origin known to seal format 2 (such an origin seals format 1 to no
    /// node that announces `sealed_v2`, so the envelope is a replay of an old one).
    /// - Returns: whether the envelope is of format 2.
    private func checkFormat(of payload: [UInt8], from origin: PeerID, sealer: any MessageSealer) throws -> Bool {
        guard sealer.bindsFrames else { return false }
        let bound = sealer.isBound(payload)
        if bound, !configuration.features.contains(.sealedV2) {
            throw MeshError(
                .envelopeFormatUnsupported,
                "envelope from \(origin.short) is of format 2, which this node does not announce (sealed_v2); dropped"
            )
        }
        if !bound, configuration.features.contains(.sealedV2), delivery.table.formats.speaksFormatTwo(origin) == true {
            throw MeshError(
                .envelopeDowngraded,
                "envelope from \(origin.short) is of format 1, which binds no message ID, but \(origin.short) seals format 2 to this node: a replay of an old envelope; dropped"
            )
        }
        return bound
    }

    private func rejectEnvelope(_ frame: DataFrame, _ error: any Error, session: LinkSession) {
        let code = (error as? MeshError)?.code.name ?? "openFailed"
        let reason = (error as? MeshError)?.message ?? "\(error)"
        stats.update { $0.sealedMessagesRejected[code, default: 0] += 1 }
        remoteLog.note(
            "open_failed.\(code)",
            "dropping message \(frame.messageID) from \(frame.origin) over \(session.transport): \(reason)"
        ) {
            "dropped \(LogLimiter.formatted($0)) more messages whose envelope did not open in the last \(LogLimiter.formatted($1)): \(code)"
        }
        bus.emit(.malformedInput(transport: session.transport, peer: frame.origin, reason: reason))
    }

    /// Opens a sealed payload, or checks that an unsealed one came from its origin.
    /// - Returns: the plaintext, or nil when the message must be dropped.
    private func open(_ frame: DataFrame, _ payload: [UInt8], session: LinkSession) -> [UInt8]? {
        if frame.flags & DataFrame.sealedFlag == 0 {
            // Unsealed messages are trusted only from the link's authenticated remote
            // itself: a peer cannot speak for another origin without an envelope.
            guard frame.origin == session.remote else {
                stats.update { $0.sealedMessagesRejected["unsealedFromThirdParty", default: 0] += 1 }
                remoteLog.note(
                    "unsealed_from_third_party",
                    "dropping unsealed message \(frame.messageID) claiming origin \(frame.origin) from \(session.remote)"
                ) {
                    "dropped \(LogLimiter.formatted($0)) more unsealed messages claiming another origin in the last \(LogLimiter.formatted($1))"
                }
                bus.emit(
                    .malformedInput(
                        transport: session.transport,
                        peer: session.remote,
                        reason: "unsealed message claims another origin"
                    )
                )
                return nil
            }
            return payload
        }
        guard let sealer else {
            stats.update { $0.sealedMessagesRejected["noSealer", default: 0] += 1 }
            remoteLog.note(
                "sealed_no_sealer",
                "dropping sealed message \(frame.messageID) from \(frame.origin): this router has no sealer to open it"
            ) {
                "dropped \(LogLimiter.formatted($0)) more sealed messages (no sealer) in the last \(LogLimiter.formatted($1))"
            }
            return nil
        }
        do {
            let bound = try checkFormat(of: payload, from: frame.origin, sealer: sealer)
            let opened = try sealer.open(
                payload,
                from: frame.origin,
                binding: SealBinding(messageID: frame.messageID, flags: frame.flags)
            )
            if bound { delivery.table.formats.noteFormatTwo(from: frame.origin) }
            return opened
        } catch {
            rejectEnvelope(frame, error, session: session)
            return nil
        }
    }
}

extension DataFrame {
    /// The key of this frame's message in the hand-over set: its origin and its ID.
    var handOverKey: DedupCache.Key { DedupCache.Key(origin: origin, id: messageID) }
}
