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

    /// A new stream of every event from now on.
    func subscribe() -> AsyncStream<RouterEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: RouterEvent.self, bufferingPolicy: .bufferingNewest(4096))
        let key: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            defer { state.next += 1 }
            state.subscribers[state.next] = continuation
            return state.next
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    /// Delivers `event` to every subscriber.
    func emit(_ event: RouterEvent) {
        let subscribers: [AsyncStream<RouterEvent>.Continuation]? = state.withLock { state in
            state.subscribers.isEmpty ? nil : Array(state.subscribers.values)
        }
        for continuation in subscribers ?? [] { continuation.yield(event) }
    }

    /// Ends every stream; later subscribers get a finished stream.
    func finish() {
        let subscribers: [AsyncStream<RouterEvent>.Continuation] = state.withLock { state in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}

/// The router's counters behind a lock, updated from every part of the core.
final class StatsRecorder: Sendable {
    private let stats = Mutex(RouterStats())

    /// Changes the counters.
    func update(_ body: (inout RouterStats) -> Void) {
        stats.withLock { body(&$0) }
    }

    /// A copy of the counters.
    var snapshot: RouterStats { stats.withLock { $0 } }
}
