import Logging
import MeshCore
import Synchronization
import TransportLoopback

/// One simulated node: an identity, an outbound queue and a sink that outlive its
/// router (a restart makes a new router with the same three).
final class SimulationNode: Sendable {
    let index: Int
    let peerID: PeerID
    let queue: InMemoryOutboundQueue
    let sink: SimulationSink
    let generation = Atomic<Int>(0)
    let running = Mutex<(router: Router, task: Task<Void, Never>)?>(nil)
    let retiredStats = Mutex(RouterStats())
    /// What the node's store would keep of its announcements across a restart.
    let announceState = InMemoryAnnounceStateStore()
    /// What the node's store would keep of its route table across a restart.
    let savedRoutes: InMemoryRouteTableStore

    init(index: Int, peerID: PeerID, clock: SimulationClock, deliveries: Deliveries) {
        self.index = index
        self.peerID = peerID
        queue = InMemoryOutboundQueue(clock: clock)
        savedRoutes = InMemoryRouteTableStore(clock: clock)
        sink = SimulationSink(index: index, deliveries: deliveries)
    }

    var router: Router? { running.withLock { $0?.router } }
}

/// Every copy of every message handed to a sink, by message ID.
final class Deliveries: Sendable {
    struct Copies: Sendable {
        var generation: Int
        var whileRunning = 0
        var afterRestart = 0
    }

    private let state = Mutex<[MessageID: Copies]>([:])
    /// Topic messages: message ID → node index → copies handed to that node's sink.
    private let topicState = Mutex<[MessageID: [Int: Int]]>([:])

    var copies: [MessageID: Copies] { state.withLock { $0 } }

    /// Copies of topic message `id` each node's sink took.
    func topicCopies(_ id: MessageID) -> [Int: Int] { topicState.withLock { $0[id] ?? [:] } }

    func recordTopic(_ id: MessageID, node: Int) {
        topicState.withLock { $0[id, default: [:]][node, default: 0] += 1 }
    }

    func record(_ id: MessageID, generation: Int) {
        state.withLock { state in
            guard var copies = state[id] else {
                state[id] = Copies(generation: generation)
                return
            }
            if copies.generation == generation { copies.whileRunning += 1 } else { copies.afterRestart += 1 }
            state[id] = copies
        }
    }
}

/// A node's sink: counts every copy (so duplicates show) and takes it at once.
final class SimulationSink: MessageSink {
    let index: Int
    let deliveries: Deliveries
    let generation = Atomic<Int>(0)

    init(index: Int, deliveries: Deliveries) {
        self.index = index
        self.deliveries = deliveries
    }

    func accept(_ message: InboundMessage) async throws {
        if message.topic != nil { return deliveries.recordTopic(message.id, node: index) }
        deliveries.record(message.id, generation: generation.load(ordering: .relaxed))
    }
}

/// The run's seeded generator (SplitMix64).
struct SimulationRandom: RandomNumberGenerator, Sendable {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension RouterStats {
    /// Adds the counters the simulation reports.
    mutating func add(_ other: RouterStats) {
        ackTimeouts += other.ackTimeouts
        retries += other.retries
        deliveryRetries += other.deliveryRetries
        duplicatesDropped += other.duplicatesDropped
        framesRefused += other.framesRefused
        linksOpened += other.linksOpened
        handshakeFailures += other.handshakeFailures
        announcesSent += other.announcesSent
        announcesAccepted += other.announcesAccepted
        announcesIgnored += other.announcesIgnored
        announcesSuppressed += other.announcesSuppressed
        shortcutsOffered += other.shortcutsOffered
        relayAccepted += other.relayAccepted
        messagesRelayed += other.messagesRelayed
        receiptsAccepted += other.receiptsAccepted
        for (key, value) in other.announcesRejected { announcesRejected[key, default: 0] += value }
        for (key, value) in other.routeRequests { routeRequests[key, default: 0] += value }
        for (key, value) in other.routeSummaries { routeSummaries[key, default: 0] += value }
        for (key, value) in other.relayRefused { relayRefused[key, default: 0] += value }
        for (key, value) in other.receiptsIgnored { receiptsIgnored[key, default: 0] += value }
    }
}
