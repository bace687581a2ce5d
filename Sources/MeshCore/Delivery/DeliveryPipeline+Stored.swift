extension DeliveryPipeline {
    /// The checks every send passes before anything is queued: relaying on, the size
    /// within `max_message_size`, and a caller's message ID not in use for another
    /// peer. Returns the message's ID, and whether it is a retry of a message that is
    /// on its way or arrived (which changes nothing).
    func admit(to peer: PeerID, bytes: Int, options: SendOptions) async throws -> (MessageID, known: Bool) {
        guard relay.isEnabled else {
            throw MeshError(
                .relayDisabled,
                "relaying is switched off, so this node neither sends nor receives (set relay.enabled: true)"
            )
        }
        guard bytes <= configuration.maxMessageSize else {
            throw MeshError(
                .messageTooLarge,
                "message of \(bytes) bytes exceeds max message size \(configuration.maxMessageSize)"
            )
        }
        let id = options.id ?? MessageID.random()
        if options.id != nil, let existing = await queue.record(id) {
            guard existing.destination == peer else {
                throw MeshError(
                    .invalidArgument,
                    "message \(id.hex) was queued for \(existing.destination), not \(peer); use a new message ID"
                )
            }
            // A retry of a message that is on its way (or arrived) changes nothing.
            if existing.status != .failed && existing.status != .expired { return (id, true) }
        }
        return (id, false)
    }

    /// What ``submit(to:stored:options:)`` would refuse for a payload of `bytes` bytes,
    /// refused before the payload exists (``Router/checkSend(to:bytes:options:)``); the
    /// emergency limit is looked at, not spent.
    func check(to peer: PeerID, bytes: Int, options: SendOptions) async throws {
        let (_, known) = try await admit(to: peer, bytes: bytes, options: options)
        if known { return }  // a retry of a message on its way: the send changes nothing
        if options.emergency {
            guard peer != localPeerID else { throw Self.emergencyToSelf }
            if let refusal = flood.emergencyRefusal(origin: localPeerID) { throw ownEmergencyLimit(refusal) }
        }
        try await queue.checkRoom(for: peer, bytes: bytes)
    }

    static var emergencyToSelf: MeshError {
        MeshError(.invalidArgument, "an emergency message to this node itself goes nowhere; send it to another peer")
    }

    func ownEmergencyLimit(_ refusal: String) -> MeshError {
        MeshError(
            .rateLimited,
            "this node sent flood.emergency_per_hour (\(configuration.flood.emergencyPerHour)) emergency messages in the last hour (\(refusal)); nothing was queued: send it without the emergency flag, or later"
        )
    }

    /// Queues a payload that is already stored (``Router/send(to:stored:options:)``).
    /// The plain case — another peer, a direct link up or a sealing policy that does
    /// not seal, no emergency, a digest made — hands `stored` to the queue as it is.
    /// Every other case needs the bytes (to seal them, hash them, or deliver them
    /// here): they are read back and go the way of ``submit(to:payload:options:)``.
    func submit(to peer: PeerID, stored: any StoredPayload, options: SendOptions) async throws -> MessageID {
        let sealsNow = sealer != nil && (configuration.sealing == .always || !hasLink(to: peer))
        let needsDigest = receipts != nil && stored.contentDigest.isEmpty
        if peer == localPeerID || options.emergency || sealsNow || needsDigest {
            let bytes: [UInt8]
            do {
                bytes = try await stored.bytes()
            } catch {
                stored.discard()
                throw error
            }
            stored.discard()
            return try await submit(to: peer, payload: bytes, options: options)
        }
        let id: MessageID
        do {
            let known: Bool
            (id, known) = try await admit(to: peer, bytes: stored.byteCount, options: options)
            if known {
                stored.discard()
                return id
            }
            try await queue.enqueue(
                OutboundMessage(
                    id: id,
                    destination: peer,
                    payload: [],
                    flags: 0,
                    contentDigest: receipts == nil ? [] : stored.contentDigest,
                    expiresAfter: options.expiresAfter
                ),
                stored: stored
            )
        } catch {
            stored.discard()
            throw error
        }
        // From here the queue owns the payload.
        return try await queued(id, to: peer, options: options)
    }
}
