import DequeModule
import Synchronization

/// A bounded, multi-producer single-consumer channel: ``send(_:)`` suspends while the
/// buffer is full, so a slow consumer slows the producers.
///
/// Cancellation: a cancelled ``send(_:)`` leaves the queue of waiting senders and
/// returns false (its element was not taken); a cancelled ``receive()`` returns nil.
public final class BoundedChannel<Element: Sendable>: Sendable {
    private struct Sender {
        var id: UInt64
        var element: Element
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var buffer: Deque<Element> = []
        var senders: Deque<Sender> = []
        var receiver: CheckedContinuation<Element?, Never>?
        var finished = false
        var nextSender: UInt64 = 0
    }

    private let capacity: Int
    private let state = Mutex(State())

    /// Creates a channel holding at most `capacity` elements before senders wait.
    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Sends one element, suspending while the channel is full.
    /// - Returns: false when the channel was finished (or the task cancelled) and the
    ///   element was dropped.
    @discardableResult
    public func send(_ element: Element) async -> Bool {
        let cancelled = Task.isCancelled
        let action: SendAction = state.withLock { state in
            if state.finished || cancelled { return .done(false) }
            if let receiver = state.receiver {
                state.receiver = nil
                return .handOff(receiver)
            }
            if state.buffer.count < capacity {
                state.buffer.append(element)
                return .done(true)
            }
            state.nextSender += 1
            return .wait(state.nextSender)
        }
        switch action {
        case .done(let accepted): return accepted
        case .handOff(let receiver):
            receiver.resume(returning: element)
            return true
        case .wait(let id):
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    // State may have changed since the first look: a receiver may be
                    // waiting now (the buffer is then empty), so hand off to it first.
                    let (receiver, immediate): (CheckedContinuation<Element?, Never>?, Bool?) = state.withLock {
                        state in
                        if state.finished || Task.isCancelled { return (nil, false) }
                        if let receiver = state.receiver {
                            state.receiver = nil
                            return (receiver, true)
                        }
                        if state.buffer.count < capacity {
                            state.buffer.append(element)
                            return (nil, true)
                        }
                        state.senders.append(Sender(id: id, element: element, continuation: continuation))
                        return (nil, nil)
                    }
                    receiver?.resume(returning: element)
                    if let immediate { continuation.resume(returning: immediate) }
                }
            } onCancel: {
                let cancelled: CheckedContinuation<Bool, Never>? = state.withLock { state in
                    guard let index = state.senders.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.senders.remove(at: index).continuation
                }
                cancelled?.resume(returning: false)
            }
        }
    }

    private enum SendAction {
        case done(Bool)
        case handOff(CheckedContinuation<Element?, Never>)
        case wait(UInt64)
    }

    /// Takes the first buffered element and refills the buffer from a waiting sender.
    private static func take(_ state: inout State) -> (Element, CheckedContinuation<Bool, Never>?)? {
        guard let first = state.buffer.popFirst() else { return nil }
        var wake: CheckedContinuation<Bool, Never>?
        if let sender = state.senders.popFirst() {
            state.buffer.append(sender.element)
            wake = sender.continuation
        }
        return (first, wake)
    }

    /// Receives the next element, or nil once the channel is finished and drained (or
    /// the task is cancelled).
    public func receive() async -> Element? {
        let immediate: (Element?, CheckedContinuation<Bool, Never>?, Bool) = state.withLock { state in
            if let (first, wake) = Self.take(&state) { return (first, wake, true) }
            if state.finished { return (nil, nil, true) }
            return (nil, nil, false)
        }
        if immediate.2 {
            immediate.1?.resume(returning: true)
            return immediate.0
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready: (Element?, CheckedContinuation<Bool, Never>?, Bool) = state.withLock { state in
                    if let (first, wake) = Self.take(&state) { return (first, wake, true) }
                    if state.finished || Task.isCancelled { return (nil, nil, true) }
                    state.receiver = continuation
                    return (nil, nil, false)
                }
                if ready.2 {
                    ready.1?.resume(returning: true)
                    continuation.resume(returning: ready.0)
                }
            }
        } onCancel: {
            let receiver: CheckedContinuation<Element?, Never>? = state.withLock { state in
                defer { state.receiver = nil }
                return state.receiver
            }
            receiver?.resume(returning: nil)
        }
    }

    /// Finishes the channel: buffered elements can still be received, waiting senders
    /// are told their element was dropped, new sends are refused.
    public func finish() {
        let (senders, receiver): (Deque<Sender>, CheckedContinuation<Element?, Never>?) = state.withLock { state in
            state.finished = true
            defer {
                state.senders.removeAll()
                if state.buffer.isEmpty { state.receiver = nil }
            }
            return (state.senders, state.buffer.isEmpty ? state.receiver : nil)
        }
        for sender in senders { sender.continuation.resume(returning: false) }
        receiver?.resume(returning: nil)
    }

    /// The number of buffered elements.
    public var count: Int { state.withLock { $0.buffer.count } }
}
