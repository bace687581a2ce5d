import DequeModule
import Synchronization

/// A counting semaphore for async code. Waiters are served first come, first served.
/// ``fail(_:)`` wakes every waiter with an error and makes later acquires throw.
package final class AsyncSemaphore: Sendable {
    private struct State {
        var permits: Int
        var waiters: Deque<CheckedContinuation<Void, any Error>> = []
        var failure: (any Error)?
    }

    private let state: Mutex<State>

    /// Creates a semaphore with `permits` initial permits.
    package init(permits: Int) {
        state = Mutex(State(permits: permits))
    }

    /// Takes a permit, suspending until one is free.
    /// - Throws: the error passed to ``fail(_:)``.
    package func acquire() async throws {
        // Fast path without a continuation.
        let fast: Result<Bool, any Error> = state.withLock { state in
            if let failure = state.failure { return .failure(failure) }
            if state.permits > 0 && state.waiters.isEmpty {
                state.permits -= 1
                return .success(true)
            }
            return .success(false)
        }
        if try fast.get() { return }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let resume: Result<Void, any Error>? = state.withLock { state in
                if let failure = state.failure { return .failure(failure) }
                if state.permits > 0 && state.waiters.isEmpty {
                    state.permits -= 1
                    return .success(())
                }
                state.waiters.append(continuation)
                return nil
            }
            if let resume { continuation.resume(with: resume) }
        }
    }

    /// Returns a permit, waking the oldest waiter if there is one.
    package func release() {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { state in
            if let next = state.waiters.popFirst() { return next }
            state.permits += 1
            return nil
        }
        waiter?.resume()
    }

    /// Fails every current and future waiter with `error`.
    package func fail(_ error: any Error) {
        let waiters: Deque<CheckedContinuation<Void, any Error>> = state.withLock { state in
            if state.failure == nil { state.failure = error }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }
}

/// Mutual exclusion across suspension points.
package final class AsyncLock: Sendable {
    private let semaphore = AsyncSemaphore(permits: 1)

    /// Creates an unlocked lock.
    package init() {}

    /// Runs `body` while holding the lock.
    package func withLock<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await semaphore.acquire()
        defer { semaphore.release() }
        return try await body()
    }

    /// Makes every current and future `withLock` throw `error`.
    package func fail(_ error: any Error) { semaphore.fail(error) }
}

/// A bounded, multi-producer single-consumer channel: ``send(_:)`` suspends while the
/// buffer is full, so a slow consumer slows the producers.
public final class BoundedChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: Deque<Element> = []
        var senders: Deque<(Element, CheckedContinuation<Bool, Never>)> = []
        var receiver: CheckedContinuation<Element?, Never>?
        var finished = false
    }

    private let capacity: Int
    private let state = Mutex(State())

    /// Creates a channel holding at most `capacity` elements before senders wait.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Sends one element, suspending while the channel is full.
    /// - Returns: false when the channel was finished and the element was dropped.
    @discardableResult
    public func send(_ element: Element) async -> Bool {
        let action: SendAction = state.withLock { state in
            if state.finished { return .done(false) }
            if let receiver = state.receiver {
                state.receiver = nil
                return .handOff(receiver)
            }
            if state.buffer.count < capacity {
                state.buffer.append(element)
                return .done(true)
            }
            return .wait
        }
        switch action {
        case .done(let accepted): return accepted
        case .handOff(let receiver):
            receiver.resume(returning: element)
            return true
        case .wait:
            return await withCheckedContinuation { continuation in
                // State may have changed since the first look: a receiver may be
                // waiting now (the buffer is then empty), so hand off to it first.
                let (receiver, immediate): (CheckedContinuation<Element?, Never>?, Bool?) = state.withLock { state in
                    if state.finished { return (nil, false) }
                    if let receiver = state.receiver {
                        state.receiver = nil
                        return (receiver, true)
                    }
                    if state.buffer.count < capacity {
                        state.buffer.append(element)
                        return (nil, true)
                    }
                    state.senders.append((element, continuation))
                    return (nil, nil)
                }
                receiver?.resume(returning: element)
                if let immediate { continuation.resume(returning: immediate) }
            }
        }
    }

    private enum SendAction {
        case done(Bool)
        case handOff(CheckedContinuation<Element?, Never>)
        case wait
    }

    /// Receives the next element, or nil once the channel is finished and drained.
    public func receive() async -> Element? {
        let immediate: (Element?, CheckedContinuation<Bool, Never>?, Bool) = state.withLock { state in
            if let first = state.buffer.popFirst() {
                var wake: CheckedContinuation<Bool, Never>?
                if let (element, sender) = state.senders.popFirst() {
                    state.buffer.append(element)
                    wake = sender
                }
                return (first, wake, true)
            }
            if state.finished { return (nil, nil, true) }
            return (nil, nil, false)
        }
        if immediate.2 {
            immediate.1?.resume(returning: true)
            return immediate.0
        }
        return await withCheckedContinuation { continuation in
            let ready: (Element?, CheckedContinuation<Bool, Never>?, Bool) = state.withLock { state in
                if let first = state.buffer.popFirst() {
                    var wake: CheckedContinuation<Bool, Never>?
                    if let (element, sender) = state.senders.popFirst() {
                        state.buffer.append(element)
                        wake = sender
                    }
                    return (first, wake, true)
                }
                if state.finished { return (nil, nil, true) }
                state.receiver = continuation
                return (nil, nil, false)
            }
            if ready.2 {
                ready.1?.resume(returning: true)
                continuation.resume(returning: ready.0)
            }
        }
    }

    /// Finishes the channel: buffered elements can still be received, waiting senders
    /// are told their element was dropped, new sends are refused.
    public func finish() {
        let (senders, receiver): (Deque<(Element, CheckedContinuation<Bool, Never>)>, CheckedContinuation<Element?, Never>?) =
            state.withLock { state in
                state.finished = true
                defer {
                    state.senders.removeAll()
                    state.receiver = nil
                }
                return (state.senders, state.buffer.isEmpty ? state.receiver : nil)
            }
        for (_, sender) in senders { sender.resume(returning: false) }
        receiver?.resume(returning: nil)
    }

    /// The number of buffered elements.
    public var count: Int { state.withLock { $0.buffer.count } }
}
