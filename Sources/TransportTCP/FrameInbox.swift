import MeshCore
import NIOCore
import Synchronization

/// The inbound side of a TCP link: frames handed over by the channel's event loop and
/// taken by `Link.receive()` (one consumer at a time).
///
/// Bounded: when ``highWatermark`` frames wait, the link's handler stops asking NIO to
/// read the socket, so the kernel's receive window fills and the remote sender slows
/// down; once the consumer has drained to ``lowWatermark`` reading resumes. At most
/// `highWatermark` frames plus what one socket read decodes are ever held here.
/// Frames go straight from the event loop to a waiting consumer: no task in between.
final class FrameInbox: Sendable {
    enum Item: Sendable {
        case frame([UInt8])
        case failed(MeshError)
    }

    private struct State {
        var buffer = CircularBuffer<Item>(initialCapacity: 8)
        var receiver: (token: UInt64, continuation: CheckedContinuation<Item?, any Error>)?
        var nextToken: UInt64 = 0
        var finished = false
        var readingPaused = false
    }

    let lowWatermark: Int
    let highWatermark: Int
    private let channel: any Channel
    private let state = Mutex(State())

    init(channel: any Channel, lowWatermark: Int, highWatermark: Int) {
        self.channel = channel
        self.lowWatermark = max(0, lowWatermark)
        self.highWatermark = max(self.lowWatermark + 1, highWatermark)
    }

    /// Whether the handler should hold back socket reads. Read on the event loop.
    var isReadingPaused: Bool { state.withLock { $0.readingPaused } }

    /// Hands one item to the consumer (or buffers it). Called on the event loop; never
    /// waits. Items offered after ``finish(discardBuffered:)`` are dropped.
    func offer(_ item: Item) {
        let receiver: CheckedContinuation<Item?, any Error>? = state.withLock { state in
            if state.finished { return nil }
            if let receiver = state.receiver {
                state.receiver = nil
                return receiver.continuation
            }
            state.buffer.append(item)
            if state.buffer.count >= highWatermark { state.readingPaused = true }
            return nil
        }
        receiver?.resume(returning: item)
    }

    /// The next item, or nil once the inbox is finished and drained.
    /// - Throws: `CancellationError` when the calling task is cancelled while waiting;
    ///   no item is lost.
    func pop() async throws -> Item? {
        switch takeIfReady() {
        case .item(let item): return item
        case .end: return nil
        case .wait: break
        }
        let token = state.withLock { state in
            state.nextToken &+= 1
            return state.nextToken
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Item?, any Error>) in
                enum Outcome {
                    case ready(Item?)
                    case cancelled
                    case parked
                }
                var resumeReading = false
                let outcome: Outcome = state.withLock { state in
                    if let item = take(&state, resumeReading: &resumeReading) { return .ready(item) }
                    if state.finished { return .ready(nil) }
                    if Task.isCancelled { return .cancelled }
                    state.receiver = (token, continuation)
                    return .parked
                }
                if resumeReading { self.resumeReading() }
                switch outcome {
                case .ready(let item): continuation.resume(returning: item)
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .parked: break
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

    private enum Ready {
        case item(Item)
        case end
        case wait
    }

    private func takeIfReady() -> Ready {
        var resumeReading = false
        let ready: Ready = state.withLock { state in
            if let item = take(&state, resumeReading: &resumeReading) { return .item(item) }
            return state.finished ? .end : .wait
        }
        if resumeReading { self.resumeReading() }
        return ready
    }

    private func take(_ state: inout State, resumeReading: inout Bool) -> Item? {
        guard let item = state.buffer.popFirst() else { return nil }
        if state.readingPaused && state.buffer.count <= lowWatermark && !state.finished {
            state.readingPaused = false
            resumeReading = true
        }
        return item
    }

    /// Asks NIO to read again; the handler lets the read through now that it is unpaused.
    private func resumeReading() {
        let channel = self.channel
        channel.eventLoop.execute { channel.read() }
    }

    /// Ends the inbox: a waiting consumer gets nil. With `discardBuffered` (local close)
    /// the items not yet taken are dropped; otherwise (the remote ended) they are still
    /// delivered, then nil.
    func finish(discardBuffered: Bool) {
        let receiver = state.withLock { state in
            state.finished = true
            if discardBuffered { state.buffer.removeAll() }
            defer { state.receiver = nil }
            return state.receiver?.continuation
        }
        receiver?.resume(returning: nil)
    }
}
