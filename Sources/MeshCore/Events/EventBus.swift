import Synchronization

/// Fans router events out to subscribers. Each subscriber has its own stream; a slow
/// one loses its oldest events and never slows the router.
final class EventBus: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<RouterEvent>.Continuation] = [:]
        var next = 0
        var finished = false
    }

    private let state = Mutex(State())
    /// Subscribers now, read without the lock on every emit (most of the time zero).
    private let subscriberCount = Atomic<Int>(0)

    /// A new stream of every event from now on.
    func subscribe() -> AsyncStream<RouterEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: RouterEvent.self,
            bufferingPolicy: .bufferingNewest(4096)
        )
        let key: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            defer { state.next += 1 }
            state.subscribers[state.next] = continuation
            subscriberCount.store(state.subscribers.count, ordering: .releasing)
            return state.next
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            state.withLock { state in
                state.subscribers[key] = nil
                subscriberCount.store(state.subscribers.count, ordering: .releasing)
            }
        }
        return stream
    }

    /// Delivers `event` to every subscriber.
    /// Builds the event only when someone listens.
    func emit(_ event: @autoclosure () -> RouterEvent) {
        guard subscriberCount.load(ordering: .acquiring) > 0 else { return }
        let event = event()
        let subscribers: [AsyncStream<RouterEvent>.Continuation]? = state.withLock { state in
            state.subscribers.isEmpty ? nil : Array(state.subscribers.values)
        }
        for continuation in subscribers ?? [] { continuation.yield(event) }
    }

    /// Ends every stream; later subscribers get a finished stream.
    func finish() {
        let subscribers: [AsyncStream<RouterEvent>.Continuation] = state.withLock { state in
            state.finished = true
            subscriberCount.store(0, ordering: .releasing)
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}

/// The router's counters, updated from every part of the core: the per-message ones
/// are atomics (no lock on the hot path), the rest sit behind a lock; data frames and
/// bytes are counted per link (``DataCounters``) and folded in when a link closes.
final class StatsRecorder: Sendable {
    private let stats = Mutex(RouterStats())
    private let sent = Atomic<Int>(0)
    private let received = Atomic<Int>(0)

    /// Changes the counters.
    func update(_ body: (inout RouterStats) -> Void) {
        stats.withLock { body(&$0) }
    }

    /// Counts a message this node originated whose every chunk the next hop took.
    func countMessageSent() { sent.add(1, ordering: .relaxed) }

    /// Counts a message handed to this node's sink.
    func countMessageReceived() { received.add(1, ordering: .relaxed) }

    /// Adds a closed link's data counters to its transport's totals.
    func fold(_ counters: DataCounters, transport: String) {
        stats.withLock { counters.add(to: &$0.transports[transport, default: .init()]) }
    }

    /// A copy of the counters, with the data counters of the links still open.
    func snapshot(open sessions: [LinkSession]) -> RouterStats {
        var copy = stats.withLock { $0 }
        copy.messagesSent = sent.load(ordering: .relaxed)
        copy.messagesReceived = received.load(ordering: .relaxed)
        for session in sessions { session.data.add(to: &copy.transports[session.transport, default: .init()]) }
        return copy
    }
}

/// Data frames and payload bytes one link moved, counted without a lock.
final class DataCounters: Sendable {
    private let framesSent = Atomic<Int>(0)
    private let bytesSent = Atomic<Int>(0)
    private let framesReceived = Atomic<Int>(0)
    private let bytesReceived = Atomic<Int>(0)

    /// Counts a data frame the next hop acknowledged.
    func countSent(_ bytes: Int) {
        framesSent.add(1, ordering: .relaxed)
        bytesSent.add(bytes, ordering: .relaxed)
    }

    /// Counts a data frame taken from the remote.
    func countReceived(_ bytes: Int) {
        framesReceived.add(1, ordering: .relaxed)
        bytesReceived.add(bytes, ordering: .relaxed)
    }

    func add(to counters: inout TransportCounters) {
        counters.framesSent += framesSent.load(ordering: .relaxed)
        counters.bytesSent += bytesSent.load(ordering: .relaxed)
        counters.framesReceived += framesReceived.load(ordering: .relaxed)
        counters.bytesReceived += bytesReceived.load(ordering: .relaxed)
    }
}
