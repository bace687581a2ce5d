import MeshCore
import Synchronization

/// A virtual ``MeshClock`` for simulations: time stands still while the simulated
/// network works and jumps ahead (to the next sleeper's deadline, by at least a
/// quantum) when a driver finds it idle, so announcement intervals, ack timeouts and
/// retry backoffs cost no real time and a loaded machine never makes a timeout fire
/// early. ``MeshSimulation`` drives it; a test can call ``advance(to:)`` itself.
public final class SimulationClock: MeshClock {
    private struct Sleeper {
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var sleepers: [UInt64: Sleeper] = [:]
        /// The sleepers' deadlines, earliest first (with entries of sleepers that left).
        var queue = DeadlineHeap()
        var next: UInt64 = 0

        /// Drops entries of sleepers that left (cancelled) from the top of the queue.
        mutating func trim() {
            while let first = queue.first, sleepers[first.id] == nil { _ = queue.popFirst() }
        }
    }

    private let state: Mutex<State>
    /// The instant the clock started at.
    public let start: ContinuousClock.Instant

    /// Creates a clock that starts at the real `now`.
    public init(now: ContinuousClock.Instant = .now) {
        state = Mutex(State(now: now))
        start = now
    }

    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// Virtual time since the clock started.
    public var elapsed: Duration { now - start }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id: UInt64 = state.withLock { state in
            state.next += 1
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let result: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    state.queue.insert(DeadlineHeap.Entry(deadline: deadline, id: id))
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                let sleeper = state.sleepers.removeValue(forKey: id)
                // Its queue entry stays until it reaches the top (or its deadline
                // passes); drop what is stale there now.
                state.trim()
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The earliest deadline any task sleeps until, or nil when none sleeps.
    public var nextDeadline: ContinuousClock.Instant? {
        state.withLock { state in
            state.trim()
            return state.queue.first?.deadline
        }
    }

    /// Tasks sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Moves time forward to `instant` (never back) and wakes every sleeper whose
    /// deadline has come, earliest first.
    public func advance(to instant: ContinuousClock.Instant) {
        let due: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            guard instant > state.now else { return [] }
            state.now = instant
            var ready: [CheckedContinuation<Void, any Error>] = []
            while let first = state.queue.first, first.deadline <= instant {
                _ = state.queue.popFirst()
                if let sleeper = state.sleepers.removeValue(forKey: first.id) { ready.append(sleeper.continuation) }
            }
            return ready
        }
        for continuation in due { continuation.resume() }
    }
}
