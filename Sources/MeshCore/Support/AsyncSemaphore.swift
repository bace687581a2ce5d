import DequeModule
import Synchronization

/// A counting semaphore for async code. Waiters are served first come, first served,
/// except that those that asked to go ahead are served before the others.
/// ``fail(_:)`` wakes every waiter with an error and makes later acquires throw; a
/// cancelled waiter leaves the queue and throws `CancellationError`.
package final class AsyncSemaphore: Sendable {
    private struct Waiter {
        var id: UInt64
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

    /// Takes a permit, suspending until one is free.
    /// - Parameter ahead: wait ahead of every waiter that did not ask so (behind those
    ///   that did).
    /// - Throws: the error passed to ``fail(_:)``, or `CancellationError`.
    package func acquire(ahead: Bool = false) async throws {
        let fast: Result<Bool, any Error> = state.withLock { state in
            if let failure = state.failure { return .failure(failure) }
            if state.permits > 0 && state.waiters.isEmpty {
                state.permits -= 1
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
                    if state.permits > 0 && state.waiters.isEmpty {
                        state.permits -= 1
                        return .success(())
                    }
                    let waiter = Waiter(id: id, ahead: ahead, continuation: continuation)
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
            let cancelled: CheckedContinuation<Void, any Error>? = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            cancelled?.resume(throwing: CancellationError())
        }
    }

    /// The tasks waiting for a permit now.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns a permit, waking the first waiter if there is one.
    package func release() {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { state in
            if let next = state.waiters.popFirst() { return next.continuation }
            state.permits += 1
            return nil
        }
        waiter?.resume()
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
