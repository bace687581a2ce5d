import DequeModule
import Synchronization

/// A counting semaphore for async code. Waiters are served first come, first served,
/// except that those that asked to go ahead are served before the others.
/// ``fail(_:)`` wakes every waiter with an error and makes later acquires throw; a
/// cancelled waiter leaves the queue and throws `CancellationError`.
package final class AsyncSemaphore: Sendable {
    private struct Waiter {
        var id: UInt64
        var count: Int
        var ahead: Bool
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var permits: Int
        var waiters: Deque<Waiter> = []
        var failure: (any Error)?
        var nextWaiter: UInt64 = 0
    }

    private let state: Mutex<State>

    /// Creates a semaphore with `permits` initial permits.
    package init(permits: Int) {
        state = Mutex(State(permits: permits))
    }

    /// Takes `count` permits at once, suspending until they are free.
    /// - Parameters:
    ///   - count: the permits to take (a reader waiting until every delivery it started
    ///     ended takes them all).
    ///   - ahead: wait ahead of every waiter that did not ask so (behind those that did).
    /// - Throws: the error passed to ``fail(_:)``, or `CancellationError`.
    package func acquire(_ count: Int = 1, ahead: Bool = false) async throws {
        let fast: Result<Bool, any Error> = state.withLock { state in
            if let failure = state.failure { return .failure(failure) }
            if state.permits >= count && state.waiters.isEmpty {
                state.permits -= count
                return .success(true)
            }
            return .success(false)
        }
        if try fast.get() { return }
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { state in
                    if let failure = state.failure { return .failure(failure) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.permits >= count && state.waiters.isEmpty {
                        state.permits -= count
                        return .success(())
                    }
                    let waiter = Waiter(id: id, count: count, ahead: ahead, continuation: continuation)
                    if ahead, let behind = state.waiters.firstIndex(where: { !$0.ahead }) {
                        state.waiters.insert(waiter, at: behind)
                    } else {
                        state.waiters.append(waiter)
                    }
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let (cancelled, woken) = state.withLock {
                state -> (CheckedContinuation<Void, any Error>?, [CheckedContinuation<Void, any Error>]) in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return (nil, []) }
                let cancelled = state.waiters.remove(at: index).continuation
                // A waiter for more permits than are free may have held up those behind it.
                return (cancelled, Self.grant(&state))
            }
            cancelled?.resume(throwing: CancellationError())
            for waiter in woken { waiter.resume() }
        }
    }

    /// The tasks waiting for a permit now.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns `count` permits, waking the waiters at the front whose permits are free
    /// now, in order.
    package func release(_ count: Int = 1) {
        let woken = state.withLock { state in
            state.permits += count
            return Self.grant(&state)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Gives the free permits to the waiters at the front, in order, while the first
    /// one's permits are free; returns them to resume.
    private static func grant(_ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        var woken: [CheckedContinuation<Void, any Error>] = []
        while let next = state.waiters.first, next.count <= state.permits {
            state.permits -= next.count
            woken.append(state.waiters.removeFirst().continuation)
        }
        return woken
    }

    /// Fails every current and future waiter with `error`.
    package func fail(_ error: any Error) {
        let waiters: Deque<Waiter> = state.withLock { state in
            if state.failure == nil { state.failure = error }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }
}

/// Mutual exclusion across suspension points.
package final class AsyncLock: Sendable {
    private let semaphore = AsyncSemaphore(permits: 1)

    /// Creates an unlocked lock.
    package init() {}

    /// Runs `body` while holding the lock.
    /// - Throws: what `body` throws, the lock's failure, or `CancellationError` while waiting.
    package func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await semaphore.acquire()
        defer { semaphore.release() }
        return try await body()
    }

    /// Makes every current and future `withLock` throw `error`.
    package func fail(_ error: any Error) { semaphore.fail(error) }
}
