#if !canImport(CBlueZ)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

// The reactor of builds without the BLE trait (no BlueZ headers, so no epoll shim):
// there only the unit tests' socketpair links use it. BLE builds use the epoll reactor
// in FDReactor.swift.

/// Waits for file-descriptor readiness on one dedicated thread running `poll(2)` and
/// resumes the waiting tasks. Interest is one-shot: a task asks "tell me when `fd` is
/// readable", tries its non-blocking call when woken and asks again on `EAGAIN`, so a
/// spurious wake-up is harmless.
///
/// Callers must keep a descriptor open while they wait on it (``SeqPacketLink`` counts
/// its in-flight operations for that), so a number is never reused under a waiter.
package final class FDReactor: Sendable {
    /// What a waiter waits for.
    package enum Interest: Sendable {
        case readable
        case writable
    }

    private struct Waiter {
        var token: UInt64
        var fd: Int32
        var interest: Interest
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var cancelled: Set<UInt64> = []
        var nextToken: UInt64 = 0
        var started = false
    }

    /// No executor here: only the epoll reactor (BLE builds) runs tasks on its thread.
    package var taskExecutor: (any TaskExecutor)? { nil }

    /// The process-wide reactor (one thread, started on first use).
    package static let shared = FDReactor()

    private let state = Mutex(State())
    /// A pipe whose read end interrupts `poll` when the waiter set changes.
    private let wakeFD: Int32
    private let pokeFD: Int32

    private init() {
        var ends: [Int32] = [-1, -1]
        let result = pipe(&ends)
        precondition(result == 0, "pipe failed: errno \(errno)")
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeFD = ends[0]
        pokeFD = ends[1]
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
                let (cancelled, needsThread) = state.withLock { state -> (Bool, Bool) in
                    if state.cancelled.remove(token) != nil { return (true, false) }
                    state.waiters[token] = Waiter(token: token, fd: fd, interest: interest, continuation: continuation)
                    let start = !state.started
                    state.started = true
                    return (false, start)
                }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                if needsThread { startThread() }
                poke()
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let waiter = state.waiters.removeValue(forKey: token) { return waiter }
                state.cancelled.insert(token)
                return nil
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Resumes every task waiting on `fd` (they retry their call and see the new state).
    package func wakeAll(fd: Int32) {
        let woken = state.withLock { state -> [Waiter] in
            let matching = state.waiters.values.filter { $0.fd == fd }
            for waiter in matching { state.waiters[waiter.token] = nil }
            return matching
        }
        for waiter in woken { waiter.continuation.resume() }
    }

    private func poke() {
        var one: UInt8 = 1
        _ = Glibc.write(pokeFD, &one, 1)
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

    private func run() {
        var fds: [pollfd] = []
        while true {
            fds.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
            state.withLock { state in
                var events: [Int32: Int16] = [:]
                for waiter in state.waiters.values {
                    events[waiter.fd, default: 0] |= Int16(waiter.interest == .readable ? POLLIN : POLLOUT)
                }
                for (fd, mask) in events { fds.append(pollfd(fd: fd, events: mask, revents: 0)) }
            }
            let count = fds.withUnsafeMutableBufferPointer { poll($0.baseAddress, nfds_t($0.count), -1) }
            if count < 0 { continue }  // EINTR
            if fds[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 256)
                while Glibc.read(wakeFD, &drain, drain.count) > 0 {}
            }
            var ready: [Int32: Int16] = [:]
            for entry in fds.dropFirst() where entry.revents != 0 { ready[entry.fd] = entry.revents }
            if ready.isEmpty { continue }
            let woken = state.withLock { state -> [Waiter] in
                var woken: [Waiter] = []
                for waiter in state.waiters.values {
                    guard let revents = ready[waiter.fd] else { continue }
                    let failure = Int16(POLLERR | POLLHUP | POLLNVAL)
                    let wanted = Int16(waiter.interest == .readable ? POLLIN : POLLOUT)
                    if revents & (wanted | failure) != 0 { woken.append(waiter) }
                }
                for waiter in woken { state.waiters[waiter.token] = nil }
                return woken
            }
            for waiter in woken { waiter.continuation.resume() }
        }
    }
}
#endif
