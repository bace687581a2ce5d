import DequeModule
import Logging
import Synchronization

extension GossipRouter {
    /// IWANT answers per message and neighbour (gossipsub's retransmission limit).
    static let maxServesPerMessage = 3
    /// Origins whose share is tracked at once; beyond, the shares start afresh.
    static let maxOriginBuckets = 16_384
    /// How far apart two nodes' wall clocks may be for a signed publication time
    /// (10 minutes): a message is accepted until its lifetime plus this has passed
    /// since publication, and not from further in the future than this.
    static let maxClockSkewMillis = 600_000

    // MARK: Messages

    /// Takes a topic message from neighbour `session.remote`: checks it, remembers it,
    /// delivers it when subscribed and pushes it on along the mesh.
    func accept(_ frame: TopicMessageFrame, from session: LinkSession) async {
        let peer = session.remote
        let now = clock.now
        guard relay.isEnabled else { return reject("relayOff", frame, peer) }
        enum Check {
            case duplicate, ignored, fresh
        }
        let check = state.withLock { state -> Check in
            if isIgnored(peer, state, now: now) { return .ignored }
            // The sender holds it: no IHAVE of it to that neighbour.
            state.peers[peer]?.holds.insert(frame.id)
            if state.seen[frame.id].map({ $0 > now }) ?? false { return .duplicate }
            return .fresh
        }
        switch check {
        case .ignored: return reject("ignoredPeer", frame, peer)
        case .duplicate:
            stats.update { $0.topics.duplicates += 1 }
            return
        case .fresh: break
        }
        // The signature first: a forgery in the origin's name must spend none of the
        // origin's share, or the honest origin's own messages would be refused and
        // its link penalised for a flood it did not make. Its sender is penalised.
        guard let signer else { return reject("noVerifier", frame, peer) }
        guard frame.verify(with: signer) else {
            reject("badSignature", frame, peer)
            return penalise(
                peer,
                reason: "badSignature",
                detail: "message \(frame.id) on \(frame.topic) is not signed by its origin \(frame.origin)"
            )
        }
        guard frame.ttl >= 1 else { return reject("ttlExhausted", frame, peer) }
        let lifetimeMillis = UInt64(frame.lifetimeSeconds) * 1000
        guard UInt64(frame.ageMillis) < lifetimeMillis else { return reject("expired", frame, peer) }
        // Each origin's share per topic, spent only on verified, unexpired messages: a
        // relay never passes on more of one origin than the share, so only the flooder
        // itself exceeds it at its neighbours.
        enum Share {
            case allowed, flooding, overRate
        }
        let share = state.withLock { state -> Share in
            let key = OriginTopic(origin: frame.origin, topic: frame.topic)
            if state.originBuckets.count >= Self.maxOriginBuckets && state.originBuckets[key] == nil {
                state.originBuckets.removeAll()
            }
            var bucket =
                state.originBuckets[key]
                ?? AnnounceBudget(rate: configuration.peerRate, burst: configuration.peerBurst, now: now)
            let allowed = bucket.take(now: now)
            state.originBuckets[key] = bucket
            if allowed { return .allowed }
            return frame.origin == peer ? .flooding : .overRate
        }
        switch share {
        case .overRate: return reject("originOverRate", frame, peer)
        case .flooding:
            reject("flooding", frame, peer)
            return penalise(
                peer,
                reason: "flooding",
                detail: "published more than \(configuration.peerBurst) messages on \(frame.topic) at once"
            )
        case .allowed: break
        }
        if frame.topic == TopicName.emergency {
            // An emergency broadcast spends the origin's emergency budget here, and the
            // neighbour's, like a relayed emergency message (§A.10); only once verified.
            guard let emergencies else { return reject("emergencyOff", frame, peer) }
            if frame.origin != localPeerID,
                let refusal = emergencies.admitEmergency(origin: frame.origin, neighbour: peer)
            {
                return reject(refusal, frame, peer)
            }
        }
        guard frame.origin != localPeerID else {
            // Our own message back from a node that lost track of it (restart).
            stats.update { $0.topics.duplicates += 1 }
            return
        }
        // The age is not signed: a copy claiming to be almost expired would otherwise
        // be forgotten at once and accepted again when replayed. So the ID is kept for
        // the message's whole signed lifetime, whatever age this copy claims, and for
        // as long as its signed publication time (format 2) lets a copy be accepted.
        var remaining = Duration.milliseconds(Int64(clamping: lifetimeMillis))
        if let published = frame.publishedMillis, let wall = clock.wallClockMillis {
            let skew = UInt64(Self.maxClockSkewMillis)
            guard published <= wall &+ skew else { return reject("fromFuture", frame, peer) }
            let acceptedUntil = published &+ lifetimeMillis &+ skew
            guard wall < acceptedUntil else { return reject("expired", frame, peer) }
            remaining = max(remaining, .milliseconds(Int64(clamping: acceptedUntil - wall)))
        }
        let (isNew, subscribed, targets) = state.withLock { state -> (Bool, Bool, [PeerID]) in
            if state.seen[frame.id].map({ $0 > now }) ?? false { return (false, false, []) }
            markSeen(frame.id, until: now + remaining, &state)
            state.requested[frame.id] = nil
            let participating = distance(frame.topic, state) != nil
            if participating { cacheMessage(frame, now: now, &state) }
            let targets =
                participating && frame.ttl > 1
                ? (state.mesh[frame.topic] ?? []).filter { $0 != peer && $0 != frame.origin } : []
            return (true, state.subscribed.contains(frame.topic), Array(targets))
        }
        guard isNew else {
            stats.update { $0.topics.duplicates += 1 }
            return
        }
        stats.update { $0.topics.accepted += 1 }
        do {
            try await store.rememberTopicMessage(frame.id, for: remaining)
        } catch {
            logger.warning("could not remember topic message \(frame.id) in the store: \(error)")
        }
        if subscribed { await deliver(frame, transport: session.transport) }
        guard !targets.isEmpty else { return }
        guard
            admission.admitTopicRelay(
                topic: frame.topic,
                origin: frame.origin,
                from: peer,
                bytes: frame.payload.count,
                recipients: targets.count
            )
        else {
            stats.update { $0.topics.relayRefused += 1 }
            return
        }
        var onward = frame
        onward.ttl -= 1
        send(targets.map { ($0, .topicMessage(onward)) })
    }

    /// Hands a new message on a subscribed topic to the sink (the inbox).
    private func deliver(_ frame: TopicMessageFrame, transport: String) async {
        let message = InboundMessage(
            id: frame.id,
            from: frame.origin,
            payload: frame.payload,
            transport: transport,
            topic: frame.topic,
            emergency: frame.topic == TopicName.emergency
        )
        do {
            try await sink.accept(message)
        } catch let error as MeshError where error.code == .discarded {
            stats.update { $0.sinkDiscards += 1 }
            return
        } catch {
            // Not kept: forget having seen it, so a later IHAVE brings it again.
            stats.update {
                $0.sinkRefusals += 1
                $0.topics.rejected["sinkRefused", default: 0] += 1
            }
            logger.debug("the message sink refused topic message \(frame.id) on \(frame.topic): \(error)")
            state.withLock { _ = $0.seen.removeValue(forKey: frame.id) }
            return
        }
        stats.update { $0.topics.delivered += 1 }
        bus.emit(
            RouterEvent(
                .topicMessageReceived,
                transport: transport,
                peer: frame.origin,
                reason: frame.topic,
                messageID: frame.id
            )
        )
    }

    private func reject(_ reason: String, _ frame: TopicMessageFrame, _ peer: PeerID) {
        stats.update { $0.topics.rejected[reason, default: 0] += 1 }
        remoteLog.note(
            "topic_rejected.\(reason)",
            "dropping topic message \(frame.id) on \(frame.topic) from \(peer): \(reason)"
        ) {
            "dropped \(LogLimiter.formatted($0)) more topic messages in the last \(LogLimiter.formatted($1)): \(reason)"
        }
    }

    /// Prunes `peer` from every mesh, tells it so with the backoff, and ignores its
    /// topic frames for the backoff.
    func penalise(_ peer: PeerID, reason: String, detail: String) {
        let now = clock.now
        let until = now + configuration.pruneBackoff
        let backoffSeconds = pruneBackoffSeconds
        let outbox = state.withLock { state -> Outbox in
            var outbox: Outbox = []
            state.peers[peer, default: PeerState()].ignoredUntil = until
            for (topic, mesh) in state.mesh {
                state.backoff[topic, default: [:]][peer] = until
                guard mesh.contains(peer) else { continue }
                state.mesh[topic]?.remove(peer)
                outbox.append(
                    (peer, .topicControl(TopicControlFrame(topic: topic, body: .prune(backoffSeconds: backoffSeconds))))
                )
            }
            return outbox + reconcile(&state, now: now)
        }
        stats.update { $0.topics.peersPenalised[reason, default: 0] += 1 }
        remoteLog.note(
            "topic_penalised.\(reason)",
            level: .info,
            "pruning \(peer) from the topic meshes for \(configuration.pruneBackoff): \(detail)"
        ) {
            "pruned \(LogLimiter.formatted($0)) more neighbours from topic meshes in the last \(LogLimiter.formatted($1)): \(reason)"
        }
        bus.emit(RouterEvent(.topicPeerPruned, peer: peer, reason: "\(reason): \(detail)"))
        send(outbox)
    }

    // MARK: Control

    /// Takes a control frame from neighbour `peer`.
    func accept(_ control: TopicControlFrame, from peer: PeerID) {
        let now = clock.now
        guard isActive, relay.isEnabled else { return }
        var outbox: Outbox = []
        var penalty: String?
        state.withLock { state in
            guard !isIgnored(peer, state, now: now) else { return }
            var budget =
                state.peers[peer]?.control
                ?? AnnounceBudget(rate: configuration.controlRate, burst: configuration.controlBurst, now: now)
            let allowed = budget.take(now: now)
            state.peers[peer, default: PeerState()].control = budget
            guard allowed else {
                stats.update { $0.topics.rejected["controlRateLimited", default: 0] += 1 }
                penalty = "controlFlood"
                return
            }
            let topic = control.topic
            switch control.body {
            case .subscribe(let distance):
                let known = state.peers[peer]?.topics[topic] != nil
                if !known && !knownTopics(state).contains(topic) && knownTopics(state).count >= configuration.maxTopics
                {
                    stats.update { $0.topics.rejected["tooManyTopics", default: 0] += 1 }
                    return
                }
                state.peers[peer, default: PeerState()].topics[topic] = distance
                outbox += reconcile(&state, now: now)
                if !known {
                    // A neighbour newly in the topic (or back after a cut): offer it
                    // everything cached, so it can fetch what it missed.
                    outbox += offer(topic, to: peer, state, since: nil)
                }
            case .unsubscribe:
                state.peers[peer]?.topics[topic] = nil
                state.mesh[topic]?.remove(peer)
                outbox += reconcile(&state, now: now)
            case .graft:
                stats.update { $0.topics.graftsReceived += 1 }
                let participating = distance(topic, state) != nil
                let backedOff = inBackoff(peer, topic, state, now: now)
                let mesh = state.mesh[topic] ?? []
                if mesh.contains(peer) { return }
                if participating && !backedOff && mesh.count < configuration.meshDegreeHigh {
                    state.mesh[topic, default: []].insert(peer)
                    return
                }
                if backedOff { penalty = "graftInBackoff" }
                let backoff = configuration.pruneBackoff
                state.backoff[topic, default: [:]][peer] = now + backoff
                outbox.append(
                    (
                        peer,
                        .topicControl(
                            TopicControlFrame(topic: topic, body: .prune(backoffSeconds: pruneBackoffSeconds))
                        )
                    )
                )
            case .prune(let seconds):
                stats.update { $0.topics.prunesReceived += 1 }
                state.mesh[topic]?.remove(peer)
                state.backoff[topic, default: [:]][peer] = now + .seconds(Int64(min(seconds, 3600)))
                outbox += reconcile(&state, now: now)
            case .ihave(let ids):
                guard distance(topic, state) != nil else { return }
                var want: [MessageID] = []
                for id in ids.prefix(256) {
                    if state.cache[id] != nil { state.peers[peer, default: PeerState()].holds.insert(id) }
                    if state.seen[id].map({ $0 > now }) ?? false { continue }
                    if state.requested[id].map({ $0 > now }) ?? false { continue }
                    state.requested[id] = now + configuration.iwantTimeout
                    want.append(id)
                }
                if !want.isEmpty {
                    outbox.append((peer, .topicControl(TopicControlFrame(topic: "", body: .iwant(want)))))
                }
            case .iwant(let ids):
                var served = 0
                for id in ids.prefix(256) {
                    guard let cached = state.cache[id], let frame = onward(cached, now: now) else { continue }
                    let count = state.peers[peer]?.served[id] ?? 0
                    guard count < Self.maxServesPerMessage else { continue }
                    state.peers[peer, default: PeerState()].served[id] = count + 1
                    outbox.append((peer, .topicMessage(frame)))
                    served += 1
                }
                if served > 0 { stats.update { $0.topics.iwantServed += served } }
            }
        }
        if penalty == "controlFlood" {
            send(outbox)
            return penalise(
                peer,
                reason: "controlFlood",
                detail:
                    "sent more than \(configuration.controlBurst) topic control frames at once (\(configuration.controlRate) a second allowed)"
            )
        }
        if let penalty {
            stats.update { $0.topics.peersPenalised[penalty, default: 0] += 1 }
        }
        send(outbox)
    }

    /// IHAVE frames for `peer` with the cached messages of `topic` (those received
    /// from heartbeat `since` on; nil: all of them) but those it showed it holds, at
    /// most ``TopicControlFrame/maxIDs`` per frame.
    func offer(_ topic: String, to peer: PeerID, _ state: State, since: Int?) -> Outbox {
        var ids: [MessageID] = []
        let holds = state.peers[peer]?.holds ?? []
        for id in state.cacheOrder {
            guard let cached = state.cache[id], cached.frame.topic == topic, cached.frame.origin != peer,
                !holds.contains(id)
            else { continue }
            if let since, cached.heartbeat < since { continue }
            ids.append(id)
        }
        guard !ids.isEmpty else { return [] }
        return stride(from: 0, to: ids.count, by: TopicControlFrame.maxIDs).map { start in
            let chunk = Array(ids[start..<min(ids.count, start + TopicControlFrame.maxIDs)])
            return (peer, .topicControl(TopicControlFrame(topic: topic, body: .ihave(chunk))))
        }
    }
}

extension RouterEvent.Kind {
    /// A message on a subscribed topic landed in the inbox (`peer` is its origin,
    /// `reason` the topic).
    public static let topicMessageReceived = RouterEvent.Kind("topic_message_received")
    /// A neighbour was pruned from the topic meshes as a penalty (`reason` says why).
    public static let topicPeerPruned = RouterEvent.Kind("topic_peer_pruned")
}
