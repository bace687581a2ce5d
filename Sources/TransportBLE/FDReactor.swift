#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Waits for file-descriptor readiness on one dedicated thread running `epoll_wait(2)`
/// and resumes the waiting tasks. Interest is one-shot: a task asks "tell me when `fd` is
/// readable", tries its non-blocking call when woken and asks again on `EAGAIN`, so a
/// spurious wake-up is harmless.
///
/// A waiter arms its descriptor itself (`epoll_ctl` with `EPOLLONESHOT`, from the
/// waiting task's thread), which takes effect in the reactor's `epoll_wait` at once: no
/// wake-up pipe, no rebuilt descriptor set, one system call per wait. The reactor
/// thread only runs when a descriptor is ready.
///
/// The reactor thread is also a `TaskExecutor` (FDReactor+Executor.swift): a task that
/// prefers it runs its link I/O there, so a readiness event resumes it on the thread that
/// saw the event instead of waking a second thread of Swift's global pool.
///
/// Callers must keep a descriptor open while they wait on it (``SeqPacketLink`` counts
/// its in-flight operations for that), so a number is never reused under a waiter.
package final class FDReactor: Sendable {
    /// What a waiter waits for.
    package enum Interest: Sendable {
        case readable
        case writable

        /// The shim's readiness flag (`cbluez_epoll_*`).
        var flag: Int32 { self == .readable ? 1 : 2 }
    }

    private struct Waiter {
        var token: UInt64
        var interest: Interest
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        /// The waiters of each descriptor; a descriptor is armed while it has any.
        var waiters: [Int32: [Waiter]] = [:]
        var cancelled: Set<UInt64> = []
        var nextToken: UInt64 = 0
        var started = false
    }

    /// The process-wide reactor (one thread, started on first use).
    package static let shared = FDReactor()

    private let state = Mutex(State())
    private let epollFD: Int32
    /// Jobs of tasks that prefer the reactor thread as their executor.
    let jobs = Mutex(ExecutorJobs())
    /// Ends the reactor's `epoll_wait` when a job arrives from another thread.
    let wakeupFD: Int32
    /// The reactor thread's `pthread_t` once it runs (0 before).
    private let thread = Atomic<UInt>(0)

    private init() {
        let fd = cbluez_epoll_create()
        precondition(fd >= 0, "epoll_create1 failed: errno \(errno)")
        epollFD = fd
        let wakeup = cbluez_wakeup_create(fd)
        precondition(wakeup >= 0, "eventfd failed: errno \(errno)")
        wakeupFD = wakeup
    }

    /// Suspends until `fd` is ready for `interest` (or hung up / in error, which the next
    /// I/O call reports), or until ``wakeAll(fd:)``.
    /// - Throws: `CancellationError` when the task is cancelled.
    package func wait(_ fd: Int32, for interest: Interest) async throws {
        let token = state.withLock { state -> UInt64 in
            state.nextToken += 1
            return state.nextToken
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome {
                    case waiting(startThread: Bool)
                    case cancelled, notPollable
                }
                let outcome = state.withLock { state -> Outcome in
                    if state.cancelled.remove(token) != nil { return .cancelled }
                    var waiters = state.waiters[fd] ?? []
                    waiters.append(Waiter(token: token, interest: interest, continuation: continuation))
                    // Armed under the lock, so the reactor's re-arm for the remaining
                    // waiters of a descriptor never overtakes a newer mask.
                    guard cbluez_epoll_arm(epollFD, fd, Self.flags(of: waiters)) == 0 else { return .notPollable }
                    state.waiters[fd] = waiters
                    return .waiting(startThread: Self.claimStart(&state))
                }
                switch outcome {
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .notPollable:
                    // A closed or unpollable descriptor: the caller's next call reports it.
                    continuation.resume()
                case .waiting(let startThread):
                    if startThread { self.startThread() }
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if var waiters = state.waiters[fd], let index = waiters.firstIndex(where: { $0.token == token }) {
                    let waiter = waiters.remove(at: index)
                    state.waiters[fd] = waiters.isEmpty ? nil : waiters
                    return waiter
                }
                state.cancelled.insert(token)
                return nil
            }
            // The descriptor may stay armed: its event then finds no waiter (harmless).
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Resumes every task waiting on `fd` (they retry their call and see the new state).
    package func wakeAll(fd: Int32) {
        let woken = state.withLock { state -> [Waiter] in
            let woken = state.waiters.removeValue(forKey: fd) ?? []
            cbluez_epoll_remove(epollFD, fd)
            return woken
        }
        for waiter in woken { waiter.continuation.resume() }
    }

    private static func flags(of waiters: [Waiter]) -> Int32 {
        waiters.reduce(0) { $0 | $1.interest.flag }
    }

    /// Starts the reactor thread unless it runs already.
    func ensureThread() {
        if state.withLock({ Self.claimStart(&$0) }) { startThread() }
    }

    private static func claimStart(_ state: inout State) -> Bool {
        if state.started { return false }
        state.started = true
        return true
    }

    private func startThread() {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread,
            nil,
            { context in
                let reactor = Unmanaged<FDReactor>.fromOpaque(context!).takeRetainedValue()
                reactor.run()
                return nil
            },
            context
        )
        precondition(result == 0, "pthread_create failed: \(result)")
        pthread_detach(thread)
    }

    /// Whether the caller runs on the reactor thread.
    package var isCurrentThread: Bool {
        thread.load(ordering: .acquiring) == UInt(pthread_self())
    }

    private func run() {
        thread.store(UInt(pthread_self()), ordering: .releasing)
        let capacity: Int32 = 64
        var fds = [Int32](repeating: -1, count: Int(capacity))
        var flags = [Int32](repeating: 0, count: Int(capacity))
        var woken: [Waiter] = []
        var batch: [UnownedJob] = []
        let failure: Int32 = 4
        while true {
            runJobs(&batch)
            // Block only when no job is queued; a job enqueued from another thread after
            // this check sees `sleeping` and signals the wake-up descriptor.
            let timeout: Int32 = jobs.withLock { jobs in
                jobs.sleeping = jobs.queue.isEmpty
                return jobs.sleeping ? -1 : 0
            }
            let count = cbluez_epoll_wait(epollFD, &fds, &flags, capacity, timeout)
            jobs.withLock { $0.sleeping = false }
            if count <= 0 { continue }  // no event, or EINTR
            state.withLock { state in
                for index in 0..<Int(count) {
                    let fd = fds[index]
                    let ready = flags[index]
                    if fd == wakeupFD {
                        cbluez_wakeup_clear(fd)
                        continue
                    }
                    guard let waiters = state.waiters[fd] else { continue }
                    var remaining: [Waiter] = []
                    for waiter in waiters {
                        if ready & (waiter.interest.flag | failure) != 0 {
                            woken.append(waiter)
                        } else {
                            remaining.append(waiter)
                        }
                    }
                    // One-shot: the descriptor is disarmed now; re-arm it for the others.
                    if remaining.isEmpty || cbluez_epoll_arm(epollFD, fd, Self.flags(of: remaining)) != 0 {
                        woken += remaining
                        state.waiters[fd] = nil
                    } else {
                        state.waiters[fd] = remaining
                    }
                }
            }
            // A task that prefers this executor is enqueued here and runs in the next
            // runJobs() on this thread; others go to their own executors.
            for waiter in woken { waiter.continuation.resume() }
            woken.removeAll(keepingCapacity: true)
        }
    }
}
#endif
