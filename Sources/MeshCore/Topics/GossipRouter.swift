import DequeModule
import Logging
import Synchronization

/// Topic publish/subscribe over the mesh, in the spirit of libp2p gossipsub v1.1
/// (docs/PROTOCOL.md §A.7).
///
/// - **Who takes part.** Every node announces, per topic, its distance to the nearest
///   subscriber it knows of (0 when subscribed itself). A node with relaying on takes
///   part in a topic when it is subscribed or a neighbour announced it within
///   `maxDistance` hops; so non-subscribers between subscribers carry the topic, but
///   never put its messages in their inbox.
/// - **Eager push.** Each participating node keeps a mesh of up to D neighbours per
///   topic (GRAFT / PRUNE); a new message goes to every mesh peer but the one it came
///   from, once (duplicates are dropped by ID, remembered across restarts).
/// - **Lazy repair.** Each heartbeat, recent message IDs go in IHAVE to a few
///   neighbours outside the mesh, and everything cached goes to a neighbour that newly
///   announces the topic (a healed link); they ask for what they miss with IWANT.
/// - **Peer scoring, light.** A neighbour that sends a message whose signature does not
///   verify, or publishes more than its share on a topic (`peerRate`, `peerBurst`), is
///   pruned from every mesh and ignored for the prune backoff. Messages of any origin
///   beyond that share are dropped, not passed on, so relays never carry a flood.
final class GossipRouter: Sendable {
    struct PeerState {
        /// The topics the peer announced, with its distance to a subscriber.
        var topics: [String: UInt8] = [:]
        /// Penalised: its topic frames are ignored until then.
        var ignoredUntil: ContinuousClock.Instant?
        /// Times each message was served to it (IWANT), at most 3.
        var served: [MessageID: Int] = [:]
        /// Cached messages it showed it holds (it sent a copy, or listed it in IHAVE):
        /// left out of the IHAVEs it gets.
        var holds: Set<MessageID> = []
        /// Its share of control frames (`controlRate`, `controlBurst`).
        var control: AnnounceBudget?
    }

    struct OriginTopic: Hashable {
        var origin: PeerID
        var topic: String
    }

    struct CachedMessage {
        var frame: TopicMessageFrame
        var receivedAt: ContinuousClock.Instant
        var heartbeat: Int
    }

    struct State {
        var subscribed: Set<String> = []
        var peers: [PeerID: PeerState] = [:]
        var mesh: [String: Set<PeerID>] = [:]
        /// What this node last announced to each peer.
        var advertised: [PeerID: [String: UInt8]] = [:]
        /// Announcements (SUBSCRIBE, UNSUBSCRIBE) still to be repeated, by peer and
        /// topic, with the repeats left: control frames are not acknowledged, so each
        /// change goes out again on the next heartbeats (`announceRepeats`).
        var repeats: [PeerID: [String: (frame: Frame, left: Int)]] = [:]
        var backoff: [String: [PeerID: ContinuousClock.Instant]] = [:]
        var seen: [MessageID: ContinuousClock.Instant] = [:]
        var seenOrder = Deque<MessageID>()
        var cache: [MessageID: CachedMessage] = [:]
        var cacheOrder = Deque<MessageID>()
        /// IWANTs outstanding: not asked again before the instant.
        var requested: [MessageID: ContinuousClock.Instant] = [:]
        var heartbeats = 0
        /// Each origin's share of messages per topic.
        var originBuckets: [OriginTopic: AnnounceBudget] = [:]
    }

    /// Frames to queue, by neighbour.
    typealias Outbox = [(PeerID, Frame)]

    let localPeerID: PeerID
    let configuration: TopicConfiguration
    let signer: (any ReceiptSigner)?
    let store: any TopicStore
    let admission: any TopicRelayAdmission
    /// The emergency budgets (`flood.emergency_per_hour`) that emergency broadcasts
    /// spend; nil when the node does not take part in emergencies.
    let emergencies: FloodControl?
    let sink: any MessageSink
    let links: LinkTable
    let relay: RelaySwitch
    let clock: any MeshClock
    let stats: StatsRecorder
    let bus: EventBus
    let logger: Logger
    let remoteLog: LogLimiter
    let state = Mutex(State())
    /// The heartbeat's interval: the configured one, or a power profile's longer one.
    let heartbeatInterval: PacedInterval
    /// Ends the heartbeat's wait for a first neighbour (``linkUp(_:)``).
    let linkWaker = TickWaker()

    init(
        localPeerID: PeerID,
        configuration: TopicConfiguration,
        signer: (any ReceiptSigner)?,
        store: any TopicStore,
        admission: any TopicRelayAdmission,
        emergencies: FloodControl? = nil,
        sink: any MessageSink,
        links: LinkTable,
        relay: RelaySwitch,
        clock: any MeshClock,
        stats: StatsRecorder,
        bus: EventBus,
        logger: Logger,
        remoteLog: LogLimiter
    ) {
        self.localPeerID = localPeerID
        self.configuration = configuration
        self.signer = signer
        self.store = store
        self.admission = admission
        self.emergencies = emergencies
        self.sink = sink
        self.links = links
        self.relay = relay
        self.clock = clock
        self.stats = stats
        self.bus = bus
        self.logger = logger
        self.remoteLog = remoteLog
        heartbeatInterval = PacedInterval(configured: configuration.heartbeatInterval)
    }

    // MARK: Starting

    /// Loads the subscriptions (the default topics but those the user unsubscribed,
    /// plus the user's own) and the seen message IDs from the store.
    func load() async {
        var stored: [String: Bool] = [:]
        var seen: [(MessageID, Duration)] = []
        do {
            stored = try await store.topicSubscriptions()
            seen = try await store.seenTopicMessages()
        } catch {
            logger.error("could not load the topic subscriptions: \(error); subscribing to the default topics only")
        }
        let now = clock.now
        let outbox = state.withLock { state -> Outbox in
            for topic in configuration.defaultTopics where stored[topic] != false { state.subscribed.insert(topic) }
            // Every node that takes part in emergencies hears emergency broadcasts.
            if emergencies != nil { state.subscribed.insert(TopicName.emergency) }
            for (topic, subscribed) in stored where subscribed && TopicName.problem(with: topic) == nil {
                state.subscribed.insert(topic)
            }
            for (id, remaining) in seen { markSeen(id, until: now + remaining, &state) }
            return reconcile(&state, now: now)
        }
        send(outbox)
    }

    /// Whether this router takes part in topics at all: it needs the identity signer
    /// to sign and verify messages (like route announcements, §A.5).
    var isActive: Bool { signer != nil }

    /// Runs the heartbeat until the task is cancelled. With no neighbour there is no
    /// mesh to keep up and no one to gossip to, so it waits for a link instead of
    /// waking every interval.
    func run() async {
        guard isActive else { return }
        while !Task.isCancelled {
            if state.withLock({ $0.peers.isEmpty }) {
                guard await linkWaker.sleep(until: clock.now + .seconds(3600), on: clock) else { return }
                continue
            }
            do { try await clock.sleep(for: heartbeatInterval.interval) } catch { return }
            heartbeat()
        }
    }

    // MARK: Links

    /// A link to `peer` came up: announce this node's topics to it.
    func linkUp(_ peer: PeerID) {
        let now = clock.now
        let outbox = state.withLock { state -> Outbox in
            if state.peers[peer] == nil { state.peers[peer] = PeerState() }
            return reconcile(&state, now: now)
        }
        linkWaker.wake(before: now)
        send(outbox)
    }

    /// Relaying was switched on or off: off, this node leaves every topic (relay =
    /// messaging); on, it announces its topics again.
    func relaySwitched() {
        let now = clock.now
        send(state.withLock { reconcile(&$0, now: now) })
    }

    /// The last link to `peer` went down: it leaves every mesh.
    func neighbourLost(_ peer: PeerID) {
        let now = clock.now
        let outbox = state.withLock { state -> Outbox in
            // A penalised neighbour stays penalised when it comes back on a new link.
            let penalisedUntil = state.peers[peer]?.ignoredUntil.flatMap { $0 > now ? $0 : nil }
            state.peers[peer] = penalisedUntil.map { PeerState(ignoredUntil: $0) }
            state.advertised[peer] = nil
            state.repeats[peer] = nil
            for topic in state.mesh.keys { state.mesh[topic]?.remove(peer) }
            return reconcile(&state, now: now)
        }
        send(outbox)
    }

    /// Takes a topic frame that arrived on `session`.
    func accept(_ frame: Frame, from session: LinkSession) async {
        switch frame {
        case .topicMessage(let message): await accept(message, from: session)
        case .topicControl(let control): accept(control, from: session.remote)
        default: break
        }
    }

    // MARK: Shared steps (called with the state locked)

    /// The prune backoff in whole seconds, as PRUNE carries it.
    var pruneBackoffSeconds: UInt16 { UInt16(clamping: configuration.pruneBackoff.components.seconds) }

    func knownTopics(_ state: State) -> Set<String> {
        var topics = state.subscribed
        for peer in state.peers.values { topics.formUnion(peer.topics.keys) }
        return topics
    }

    /// This node's distance to the nearest subscriber of `topic`; nil when it does not
    /// take part in it.
    func distance(_ topic: String, _ state: State) -> UInt8? {
        guard isActive, relay.isEnabled else { return nil }
        if state.subscribed.contains(topic) { return 0 }
        guard let best = state.peers.values.compactMap({ $0.topics[topic] }).min(), best < configuration.maxDistance
        else { return nil }
        return best + 1
    }

    func isIgnored(_ peer: PeerID, _ state: State, now: ContinuousClock.Instant) -> Bool {
        guard let until = state.peers[peer]?.ignoredUntil else { return false }
        return until > now
    }

    /// Neighbours that announced `topic` and are not ignored.
    func candidates(_ topic: String, _ state: State, now: ContinuousClock.Instant) -> [PeerID] {
        state.peers.compactMap { peer, info in
            info.topics[topic] != nil && !(info.ignoredUntil.map { $0 > now } ?? false) ? peer : nil
        }
    }

    func inBackoff(_ peer: PeerID, _ topic: String, _ state: State, now: ContinuousClock.Instant) -> Bool {
        guard let until = state.backoff[topic]?[peer] else { return false }
        return until > now
    }

    /// Brings announcements and meshes in line with the subscriptions and what the
    /// neighbours announced: changed distances go out, meshes drop peers that left
    /// and fill up to D.
    func reconcile(_ state: inout State, now: ContinuousClock.Instant) -> Outbox {
        var announcements: Outbox = []
        var grafts: Outbox = []
        let topics = knownTopics(state)
        var distances: [String: UInt8] = [:]
        for topic in topics { distances[topic] = distance(topic, state) }
        for peer in state.peers.keys {
            let before = state.advertised[peer] ?? [:]
            var after: [String: UInt8] = [:]
            for (topic, value) in distances { after[topic] = value }
            for (topic, value) in after where before[topic] != value {
                let frame = Frame.topicControl(TopicControlFrame(topic: topic, body: .subscribe(distance: value)))
                announcements.append((peer, frame))
                if configuration.announceRepeats > 0 {
                    state.repeats[peer, default: [:]][topic] = (frame, configuration.announceRepeats)
                }
            }
            for topic in before.keys where after[topic] == nil {
                let frame = Frame.topicControl(TopicControlFrame(topic: topic, body: .unsubscribe))
                announcements.append((peer, frame))
                if configuration.announceRepeats > 0 {
                    state.repeats[peer, default: [:]][topic] = (frame, configuration.announceRepeats)
                }
            }
            state.advertised[peer] = after
        }
        for topic in Set(state.mesh.keys).union(topics) {
            guard distances[topic] != nil else {
                state.mesh[topic] = nil
                continue
            }
            let eligible = Set(candidates(topic, state, now: now))
            var mesh = (state.mesh[topic] ?? []).intersection(eligible)
            if mesh.count < configuration.meshDegree {
                let more = eligible.subtracting(mesh).filter { !inBackoff($0, topic, state, now: now) }.shuffled()
                for peer in more.prefix(configuration.meshDegree - mesh.count) {
                    mesh.insert(peer)
                    grafts.append((peer, .topicControl(TopicControlFrame(topic: topic, body: .graft))))
                }
            }
            state.mesh[topic] = mesh
        }
        return announcements + grafts
    }

    func markSeen(_ id: MessageID, until expiry: ContinuousClock.Instant, _ state: inout State) {
        if state.seen.updateValue(expiry, forKey: id) == nil { state.seenOrder.append(id) }
        while state.seenOrder.count > configuration.seenCapacity, let oldest = state.seenOrder.popFirst() {
            state.seen[oldest] = nil
        }
    }

    func cacheMessage(_ frame: TopicMessageFrame, now: ContinuousClock.Instant, _ state: inout State) {
        guard state.cache[frame.id] == nil else { return }
        state.cache[frame.id] = CachedMessage(frame: frame, receivedAt: now, heartbeat: state.heartbeats)
        state.cacheOrder.append(frame.id)
        while state.cacheOrder.count > configuration.cacheCapacity, let oldest = state.cacheOrder.popFirst() {
            state.cache[oldest] = nil
        }
    }

    /// A cached message as it goes on from here: one hop fewer, older by the time held;
    /// nil when it has no hop or no time left.
    func onward(_ cached: CachedMessage, now: ContinuousClock.Instant) -> TopicMessageFrame? {
        var frame = cached.frame
        guard frame.ttl > 1 else { return nil }
        let held = (now - cached.receivedAt) / .milliseconds(1)
        let age = UInt64(frame.ageMillis) + UInt64(max(0, held.rounded(.up)))
        guard age < UInt64(frame.lifetimeSeconds) * 1000 else { return nil }
        frame.ttl -= 1
        frame.ageMillis = UInt32(age)
        return frame
    }

    // MARK: Sending

    /// A topic message as `session` may carry it: this node's own message of format 2
    /// goes to a neighbour that did not announce `topic_time` as its format-1 twin
    /// (same ID, signed again without the publication time), as the origin publishes
    /// it to such neighbours (docs/PROTOCOL.md §A.7). Another origin's format-2
    /// message cannot be turned into format 1 and is withheld by the link.
    static func format(
        _ frame: Frame,
        for session: LinkSession,
        signer: (any ReceiptSigner)?,
        localPeerID: PeerID
    ) -> Frame {
        guard case .topicMessage(var message) = frame, message.publishedMillis != nil, message.origin == localPeerID,
            !session.shared.contains(.topicTime), let signer
        else { return frame }
        message.publishedMillis = nil
        message.signature = signer.sign(message.signedBytes)
        return .topicMessage(message)
    }

    /// Queues each frame on a live link to its neighbour.
    func send(_ outbox: Outbox) {
        guard !outbox.isEmpty else { return }
        var counters = TopicCounters()
        for (peer, frame) in outbox {
            guard let session = links.sessions(to: peer).first(where: { !$0.isClosed }) else { continue }
            let frame = Self.format(frame, for: session, signer: signer, localPeerID: localPeerID)
            counters.outboxDropped += session.queueGossip(frame, capacity: configuration.outboxCapacity)
            switch frame {
            case .topicMessage: counters.transmissions += 1
            case .topicControl(let control):
                switch control.body {
                case .graft: counters.graftsSent += 1
                case .prune: counters.prunesSent += 1
                case .ihave: counters.ihavesSent += 1
                case .iwant(let ids): counters.iwantRequested += ids.count
                case .subscribe, .unsubscribe: break
                }
            default: break
            }
        }
        stats.update { stats in
            stats.topics.transmissions += counters.transmissions
            stats.topics.graftsSent += counters.graftsSent
            stats.topics.prunesSent += counters.prunesSent
            stats.topics.ihavesSent += counters.ihavesSent
            stats.topics.iwantRequested += counters.iwantRequested
            stats.topics.outboxDropped += counters.outboxDropped
        }
    }
}
