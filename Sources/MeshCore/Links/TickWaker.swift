import Synchronization

/// Lets a session's ticker sleep until the earliest thing that is actually due, and
/// wakes it sooner when something new arrives that could be due before that (a new ack
/// waiter, a refused frame, a failure that makes the link degraded, announcements
/// waiting for the budget).
///
/// The ticker plans a wake-up instant and sleeps on the session's clock; ``wake(before:)``
/// ends the sleep early when its instant is before the planned one. A wake that comes
/// while the ticker is awake (between two sleeps) is remembered, so the next sleep
/// returns at once and the ticker looks at the state again; nothing is missed.
final class TickWaker: Sendable {
    private struct State {
        /// A wake came while the ticker was not sleeping, or was not yet taken.
        var signalled = false
        /// The ticker waiting for a wake, while it sleeps.
        var waiter: CheckedContinuation<Void, Never>?
        /// When the ticker plans to wake; nil while it is awake.
        var planned: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    /// Times the ticker woke (a deadline came or it was woken), for tests and profiles.
    let wakes = Atomic<Int>(0)

    /// Whether the ticker is asleep now (it planned a wake-up), for tests.
    var isSleeping: Bool { state.withLock { $0.planned != nil } }

    /// Wakes the ticker if `instant` is before its planned wake-up (or it is awake now,
    /// when it will look again before it sleeps).
    func wake(before instant: ContinuousClock.Instant) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            if let planned = state.planned, instant >= planned { return nil }
            state.signalled = true
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Sleeps on `clock` until `deadline` or until ``wake(before:)`` ends the sleep.
    /// - Returns: false when the task was cancelled.
    func sleep(until deadline: ContinuousClock.Instant, on clock: any MeshClock) async -> Bool {
        let woken: Bool = state.withLock { state in
            if state.signalled {
                state.signalled = false
                return true
            }
            state.planned = deadline
            return false
        }
        if !woken {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await clock.sleep(until: deadline) }
                group.addTask { await self.waitForWake() }
                await group.next()
                group.cancelAll()
            }
            // Whatever woke it, the ticker reads the state afresh: a wake that came
            // meanwhile changed that state before it called `wake`.
            state.withLock { state in
                state.planned = nil
                state.signalled = false
            }
        }
        wakes.add(1, ordering: .relaxed)
        return !Task.isCancelled
    }

    private func waitForWake() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now: Bool = state.withLock { state in
                    if state.signalled || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
                let waiter = state.waiter
                state.waiter = nil
                return waiter
            }
            waiter?.resume()
        }
    }
}
