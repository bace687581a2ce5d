import MeshCore
import Synchronization

/// A ``MeshClock`` that moves only when told: tests advance it past an ack timeout,
/// a keepalive or a handshake deadline instead of waiting for real time to pass.
///
/// ```swift
/// let clock = ManualClock()
/// let router = Router(security: security, clock: clock, logger: logger)
/// ...
/// await clock.waitForSleepers(atLeast: 1)   // the router is waiting on a timeout
/// clock.advance(by: .seconds(10))           // ...which now fires
/// ```
public final class ManualClock: MeshClock {
    private struct Sleeper {
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var sleepers: [UInt64: Sleeper] = [:]
        var next: UInt64 = 0
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>
    private let start: ContinuousClock.Instant
    private let wallClockStart: UInt64?

    /// Creates a clock that starts at the real `now`.
    /// - Parameter wallClockMillis: the wall clock at `now`, in milliseconds since
    ///   1970 (UTC), which then moves with the clock; nil for a clock without one.
    public init(now: ContinuousClock.Instant = .now, wallClockMillis: UInt64? = 1_800_000_000_000) {
        state = Mutex(State(now: now))
        start = now
        wallClockStart = wallClockMillis
    }

    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    public var wallClockMillis: UInt64? {
        guard let wallClockStart else { return nil }
        let (seconds, attoseconds) = (now - start).components
        return UInt64(Int64(wallClockStart) + seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id: UInt64 = state.withLock { state in
            state.next += 1
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (result, watchers): (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) = state.withLock
                { state in
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (nil, Self.readyWatchers(&state))
                }
                for watcher in watchers { watcher.resume() }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        let due: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            state.now += duration
            let now = state.now
            let ready = state.sleepers.filter { $0.value.deadline <= now }
            for key in ready.keys { state.sleepers[key] = nil }
            return ready.values.sorted { $0.deadline < $1.deadline }.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Tasks sleeping on this clock now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Suspends until at least `count` tasks sleep on this clock.
    public func waitForSleepers(atLeast count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready: Bool = state.withLock { state in
                if state.sleepers.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func readyWatchers(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let ready = state.watchers.filter { $0.count <= count }.map(\.continuation)
        state.watchers.removeAll { $0.count <= count }
        return ready
    }
}
