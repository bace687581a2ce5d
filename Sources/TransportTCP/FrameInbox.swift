import MeshCore
import NIOCore
import Synchronization

/// The bounded handoff between a link's reader task (one producer) and
/// `Link.receive()` (one consumer at a time).
///
/// ``push(_:)`` suspends while `capacity` items wait, so a router that does not read
/// stops the reader task, which stops NIO reading the socket, which fills the TCP
/// window and slows the remote writer. ``pop()`` is cancellable without losing an item.
final class FrameInbox: Sendable {
    enum Item: Sendable {
        case frame([UInt8])
        case failed(MeshError)
    }

    private struct State {
        var buffer = CircularBuffer<Item>(initialCapacity: 4)
        var receiver: (token: UInt64, continuation: CheckedContinuation<Item?, any Error>)?
        var sender: CheckedContinuation<Void, Never>?
        var nextToken: UInt64 = 0
        var finished = false
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Hands one item to the consumer, suspending while the inbox is full.
    /// - Returns: false when the inbox was finished and the item dropped.
    func push(_ item: Item) async -> Bool {
        while true {
            enum Step {
                case done(Bool)
                case handOff(CheckedContinuation<Item?, any Error>)
                case wait
            }
            let step: Step = state.withLock { state in
                if state.finished { return .done(false) }
                if let receiver = state.receiver {
                    state.receiver = nil
                    return .handOff(receiver.continuation)
                }
                if state.buffer.count < capacity {
                    state.buffer.append(item)
                    return .done(true)
                }
                return .wait
            }
            switch step {
            case .done(let accepted):
                return accepted
            case .handOff(let receiver):
                receiver.resume(returning: item)
                return true
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state in
                        if state.finished || state.buffer.count < capacity { return true }
                        state.sender = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// The next item, or nil once the inbox is finished and drained.
    /// - Throws: `CancellationError` when the calling task is cancelled while waiting.
    func pop() async throws -> Item? {
        let immediate: (found: Bool, item: Item?, wake: CheckedContinuation<Void, Never>?) = state.withLock { state in
            if let item = state.buffer.popFirst() {
                defer { state.sender = nil }
                return (true, item, state.sender)
            }
            return (state.finished, nil, nil)
        }
        if immediate.found {
            immediate.wake?.resume()
            return immediate.item
        }
        let token = state.withLock { state in
            state.nextToken &+= 1
            return state.nextToken
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Item?, any Error>) in
                enum Outcome {
                    case item(Item?, CheckedContinuation<Void, Never>?)
                    case cancelled
                    case parked
                }
                let outcome: Outcome = state.withLock { state in
                    if let item = state.buffer.popFirst() {
                        defer { state.sender = nil }
                        return .item(item, state.sender)
                    }
                    if state.finished { return .item(nil, nil) }
                    if Task.isCancelled { return .cancelled }
                    state.receiver = (token, continuation)
                    return .parked
                }
                switch outcome {
                case .item(let item, let wake):
                    wake?.resume()
                    continuation.resume(returning: item)
                case .cancelled:
                    continuation.resume(throwing: CancellationError())
                case .parked:
                    break
                }
            }
        } onCancel: {
            let waiting: CheckedContinuation<Item?, any Error>? = state.withLock { state in
                guard let receiver = state.receiver, receiver.token == token else { return nil }
                state.receiver = nil
                return receiver.continuation
            }
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// Ends the inbox: a waiting consumer gets nil, the producer is told its item was
    /// dropped. With `discardBuffered` the items not yet taken are dropped too.
    func finish(discardBuffered: Bool) {
        let (receiver, sender) = state.withLock { state in
            state.finished = true
            if discardBuffered { state.buffer.removeAll() }
            defer {
                state.receiver = nil
                state.sender = nil
            }
            return (state.receiver?.continuation, state.sender)
        }
        receiver?.resume(returning: nil)
        sender?.resume()
    }
}
