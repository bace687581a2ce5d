import DequeModule
import Foundation
import MeshCore
import Synchronization

/// The node's recent router events, numbered: every event gets the next `id`
/// (1, 2, 3, … — monotonically increasing for the node's lifetime) and the newest
/// ``capacity`` stay in a ring, so an event-stream client that reconnects with the
/// last `id` it saw resumes without a gap or a repeat.
package final class EventLog: Sendable {
    /// One numbered event.
    package struct Entry: Sendable {
        /// Its number.
        package var id: Int
        /// When it was recorded.
        package var time: Date
        /// The event.
        package var event: RouterEvent
    }

    /// Events held for resuming.
    package let capacity: Int

    private struct State {
        var entries: Deque<Entry> = []
        var nextID = 1
        var waiters: [Int: AsyncStream<Void>.Continuation] = [:]
        var nextWaiter = 0
        var finished = false
    }

    private let state = Mutex(State())

    package init(capacity: Int = 4096) {
        self.capacity = max(capacity, 1)
    }

    /// Numbers and keeps one event, and wakes every stream.
    package func append(_ event: RouterEvent, at time: Date = Date()) {
        let waiters: [AsyncStream<Void>.Continuation] = state.withLock { state in
            state.entries.append(Entry(id: state.nextID, time: time, event: event))
            state.nextID += 1
            if state.entries.count > capacity { state.entries.removeFirst() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.yield() }
    }

    /// Appends every event of `events` until it ends.
    package func record(_ events: AsyncStream<RouterEvent>) async {
        for await event in events { append(event) }
    }

    /// The id of the newest event (0 before the first).
    package var lastID: Int { state.withLock { $0.nextID - 1 } }

    /// The held events with an id above `after`, oldest first, at most `limit`; and
    /// whether events after `after` were dropped from the ring before they could be
    /// read (`missed`: how many).
    package func entries(after: Int, limit: Int = .max) -> (entries: [Entry], missed: Int) {
        state.withLock { state in
            guard let first = state.entries.first else { return ([], 0) }
            let missed = max(0, first.id - after - 1)
            let start = max(0, after + 1 - first.id)
            guard start < state.entries.count else { return ([], missed) }
            let end = start + min(state.entries.count - start, max(0, limit))
            return (Array(state.entries[start..<end]), missed)
        }
    }

    /// A stream that yields whenever an event was appended (coalesced: a slow reader
    /// sees one wake-up for many events and reads them with ``entries(after:limit:)``).
    /// It finishes on ``finish()``, or when `end` is called.
    package func wakeUps() -> (stream: AsyncStream<Void>, end: @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let key: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            defer { state.nextWaiter += 1 }
            state.waiters[state.nextWaiter] = continuation
            return state.nextWaiter
        }
        guard let key else {
            continuation.finish()
            return (stream, {})
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.waiters.removeValue(forKey: key) }
        }
        return (stream, { continuation.finish() })
    }

    /// Wakes every stream without a new event (a keep-alive tick: the stream writes a
    /// comment, which also notices a client that went away).
    package func wakeAll() {
        let waiters = state.withLock { Array($0.waiters.values) }
        for waiter in waiters { waiter.yield() }
    }

    /// Ends every stream (the server shuts down).
    package func finish() {
        let waiters = state.withLock { state in
            state.finished = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.finish() }
    }
}
