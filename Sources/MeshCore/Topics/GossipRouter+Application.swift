import Synchronization

/// The application's side of the gossip router: subscribing, publishing, and what it
/// knows of each topic.
extension GossipRouter {

    /// Subscribes to `topic` (persisted).
    func subscribe(_ topic: String) async throws {
        try TopicName.validate(topic)
        try await store.setTopicSubscription(topic, subscribed: true)
        let now = clock.now
        let outbox = state.withLock { state -> Outbox in
            state.subscribed.insert(topic)
            return reconcile(&state, now: now)
        }
        send(outbox)
    }

    /// Unsubscribes from `topic` (persisted, also for a default topic; never the
    /// emergency topic).
    func unsubscribe(_ topic: String) async throws {
        try TopicName.validate(topic)
        if topic == TopicName.emergency, emergencies != nil {
            throw MeshError(
                .invalidArgument,
                "every node hears emergency broadcasts (\(topic)); mute or block a sender instead (scmesh contacts mute PEER)"
            )
        }
        try await store.setTopicSubscription(topic, subscribed: false)
        let now = clock.now
        let outbox = state.withLock { state -> Outbox in
            state.subscribed.remove(topic)
            return reconcile(&state, now: now)
        }
        send(outbox)
    }

    /// Signs and sends a new message on `topic`.
    func publish(_ payload: [UInt8], to topic: String) async throws -> MessageID {
        try TopicName.validate(topic)
        guard relay.isEnabled else {
            throw MeshError(
                .relayDisabled,
                "relaying is off (relay.enabled), so this node neither sends nor receives; switch it on to publish"
            )
        }
        guard let signer else {
            throw MeshError(.notRunning, "this router has no identity signer, so it cannot sign topic messages")
        }
        guard payload.count <= TopicMessageFrame.maxPayload else {
            throw MeshError(
                .messageTooLarge,
                "a topic message carries at most \(TopicMessageFrame.maxPayload) bytes; this one has \(payload.count)"
            )
        }
        if topic == TopicName.emergency {
            guard let emergencies else {
                throw MeshError(.invalidArgument, "emergencies are switched off here (features.emergency)")
            }
            if let refusal = emergencies.admitEmergency(origin: localPeerID, neighbour: nil) {
                throw MeshError(
                    .rateLimited,
                    "this node sent flood.emergency_per_hour emergency messages in the last hour (\(refusal)); nothing was sent: try later, or send it as an ordinary message"
                )
            }
        }
        var frame = TopicMessageFrame(
            id: .random(),
            origin: localPeerID,
            ttl: configuration.ttl,
            ageMillis: 0,
            lifetimeSeconds: configuration.lifetimeSeconds,
            topic: topic,
            payload: payload,
            signature: [],
            publishedMillis: clock.wallClockMillis
        )
        frame.signature = signer.sign(frame.signedBytes)
        let lifetime = Duration.seconds(Int64(frame.lifetimeSeconds))
        try await store.rememberTopicMessage(frame.id, for: lifetime)
        let now = clock.now
        let outbox = state.withLock { state -> Outbox in
            markSeen(frame.id, until: now + lifetime, &state)
            cacheMessage(frame, now: now, &state)
            let targets: [PeerID]
            if let mesh = state.mesh[topic], !mesh.isEmpty {
                targets = Array(mesh)
            } else {
                // Not in a mesh for it (yet): fan out to up to D neighbours that take part.
                targets = Array(candidates(topic, state, now: now).shuffled().prefix(configuration.meshDegree))
            }
            return targets.map { ($0, .topicMessage(frame)) }
        }
        stats.update { $0.topics.published += 1 }
        send(outbox)
        return frame.id
    }

    /// Every topic this node knows of.
    func snapshot() -> [TopicSnapshot] {
        let now = clock.now
        return state.withLock { state in
            knownTopics(state).sorted().map { topic in
                let distance = self.distance(topic, state)
                return TopicSnapshot(
                    topic: topic,
                    subscribed: state.subscribed.contains(topic),
                    relaying: distance != nil,
                    distance: distance.map(Int.init),
                    mesh: (state.mesh[topic] ?? []).sorted(),
                    peers: candidates(topic, state, now: now).sorted(),
                    cached: state.cache.values.count { $0.frame.topic == topic }
                )
            }
        }
    }
}
