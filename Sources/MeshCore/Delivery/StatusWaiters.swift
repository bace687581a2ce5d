import Synchronization

/// Tasks waiting for a message's status to change (``Router/waitForStatus(of:until:timeout:)``).
///
/// A waiter registers *before* it reads the status, so a change between the read and
/// the wait is not lost: ``notify(_:)`` marks a registered waiter fired even before it
/// started waiting.
final class StatusWaiters: Sendable {
    private struct Waiter {
        var id: MessageID
        var fired = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var byMessage: [MessageID: Set<UInt64>] = [:]
        var next: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Registers interest in `id`; pass the token to ``wait(_:until:clock:)`` or
    /// ``remove(_:)``.
    func register(_ id: MessageID) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.waiters[state.next] = Waiter(id: id)
            state.byMessage[id, default: []].insert(state.next)
            return state.next
        }
    }

    /// Wakes every waiter registered for `id`.
    func notify(_ id: MessageID) {
        let wake: [CheckedContinuation<Void, Never>] = state.withLock { state in
            guard let tokens = state.byMessage[id] else { return [] }
            var wake: [CheckedContinuation<Void, Never>] = []
            for token in tokens {
                state.waiters[token]?.fired = true
                if let continuation = state.waiters[token]?.continuation {
                    wake.append(continuation)
                    state.waiters[token]?.continuation = nil
                }
            }
            return wake
        }
        for continuation in wake { continuation.resume() }
    }

    /// Forgets a token.
    func remove(_ token: UInt64) {
        let continuation: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: token) else { return nil }
            state.byMessage[waiter.id]?.remove(token)
            if state.byMessage[waiter.id]?.isEmpty == true { state.byMessage[waiter.id] = nil }
            return waiter.continuation
        }
        continuation?.resume()
    }

    /// Suspends until the token's message is notified, `deadline` passes, or the task
    /// is cancelled; then forgets the token.
    func wait(_ token: UInt64, until deadline: ContinuousClock.Instant?, clock: any MeshClock) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.suspend(token) }
            if let deadline {
                group.addTask {
                    try? await clock.sleep(until: deadline)
                    self.fire(token)
                }
            }
            await group.next()
            group.cancelAll()
        }
        remove(token)
    }

    private func suspend(_ token: UInt64) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow: Bool = state.withLock { state in
                    guard let waiter = state.waiters[token], !waiter.fired else { return true }
                    state.waiters[token]?.continuation = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            fire(token)
        }
    }

    private func fire(_ token: UInt64) {
        let continuation: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.waiters[token]?.fired = true
            let continuation = state.waiters[token]?.continuation
            state.waiters[token]?.continuation = nil
            return continuation
        }
        continuation?.resume()
    }
}
