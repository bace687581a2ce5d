import MeshCore
import NIOCore
import Synchronization

/// The outbound side of a TCP link: a small bounded queue drained on the channel's event
/// loop in batches, one flush per batch.
///
/// ``write(_:)`` suspends while the queue holds ``limit`` bytes or the channel is not
/// writable (NIO's write-buffer watermarks), so a slow remote slows the sender and memory
/// stays bounded: at most `limit` bytes here plus the channel's high watermark.
/// Batching matters for small frames: while the event loop is in a `writev`, further
/// frames gather in the queue and go out with the next single flush, instead of one
/// event-loop hop and one system call per frame.
final class FrameWriter: Sendable {
    private struct State {
        var queue: [ByteBuffer] = []
        var queuedBytes = 0
        var drainScheduled = false
        var writable = true
        var closed = false
        var waiters: [(token: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextToken: UInt64 = 0
    }

    /// Bytes the queue may hold before ``write(_:)`` waits.
    let limit: Int
    private let channel: any Channel
    private let state = Mutex(State())

    init(channel: any Channel, limit: Int) {
        self.channel = channel
        self.limit = limit
    }

    struct Closed: Error {}

    /// Queues one encoded frame, suspending while the queue is full or the socket is
    /// not writable.
    /// - Throws: ``Closed`` once the channel closed; `CancellationError` when the caller
    ///   is cancelled while waiting.
    func write(_ buffer: ByteBuffer) async throws {
        while true {
            enum Step {
                case queued(scheduleDrain: Bool)
                case closed
                case wait
            }
            let step: Step = state.withLock { state in
                if state.closed { return .closed }
                guard state.writable, state.queuedBytes < limit else { return .wait }
                state.queue.append(buffer)
                state.queuedBytes += buffer.readableBytes
                if state.drainScheduled { return .queued(scheduleDrain: false) }
                state.drainScheduled = true
                return .queued(scheduleDrain: true)
            }
            switch step {
            case .queued(let scheduleDrain):
                if scheduleDrain { channel.eventLoop.execute { self.drain() } }
                return
            case .closed:
                throw Closed()
            case .wait:
                try await waitForRoom()
            }
        }
    }

    private func waitForRoom() async throws {
        let token = state.withLock { state in
            state.nextToken &+= 1
            return state.nextToken
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Outcome {
                    case retry
                    case cancelled
                    case parked
                }
                let outcome: Outcome = state.withLock { state in
                    if state.closed || (state.writable && state.queuedBytes < limit) { return .retry }
                    if Task.isCancelled { return .cancelled }
                    state.waiters.append((token, continuation))
                    return .parked
                }
                switch outcome {
                case .retry: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .parked: break
                }
            }
        } onCancel: {
            let waiter: CheckedContinuation<Void, any Error>? = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.token == token }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Writes everything queued and flushes once. Runs on the event loop.
    private func drain() {
        let (batch, wake) = state.withLock { state in
            state.drainScheduled = false
            let batch = state.queue
            state.queue.removeAll(keepingCapacity: true)
            state.queuedBytes = 0
            return (batch, takeWaitersIfRoom(&state))
        }
        for waiter in wake { waiter.resume() }
        guard !batch.isEmpty else { return }
        for buffer in batch {
            channel.write(buffer, promise: nil)
        }
        channel.flush()
    }

    /// Mirrors the channel's writability. Runs on the event loop.
    func setWritable(_ writable: Bool) {
        let wake = state.withLock { state in
            state.writable = writable
            return takeWaitersIfRoom(&state)
        }
        for waiter in wake { waiter.resume() }
    }

    /// Fails the current and later writes: the channel closed.
    func close() {
        let waiters = state.withLock { state in
            state.closed = true
            defer { state.waiters.removeAll() }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func takeWaitersIfRoom(_ state: inout State) -> [CheckedContinuation<Void, any Error>] {
        guard state.writable, state.queuedBytes < limit, !state.waiters.isEmpty else { return [] }
        defer { state.waiters.removeAll() }
        return state.waiters.map(\.continuation)
    }
}
