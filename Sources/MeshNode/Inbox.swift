import Foundation
import MeshCore
import NIOCore
import Synchronization

/// The node's in-memory inbox: the last messages that arrived, oldest dropped first.
/// (A later version keeps them in the node's SQLite store.)
public final class Inbox: MessageSink {
    /// One received message with its place in the inbox.
    public struct Entry: Sendable, Hashable {
        /// Increasing number, starting at 1, never reused while the node runs.
        public var sequence: Int
        /// When the node received it.
        public var receivedAt: Date
        /// The message.
        public var message: InboundMessage
    }

    private struct State {
        var entries = CircularBuffer<Entry>()
        var nextSequence = 1
        var bytes = 0
    }

    /// Most messages kept.
    public let capacity: Int
    /// Most payload bytes kept (the newest message is kept even when larger).
    public let maxBytes: Int
    private let state = Mutex(State())

    /// Creates an empty inbox holding at most `capacity` messages and `maxBytes`
    /// payload bytes.
    public init(capacity: Int, maxBytes: Int = .max) {
        self.capacity = max(1, capacity)
        self.maxBytes = max(0, maxBytes)
    }

    /// Adds a message, dropping the oldest while either bound is exceeded.
    @discardableResult
    public func append(_ message: InboundMessage, at date: Date = Date()) -> Entry {
        state.withLock { state in
            let entry = Entry(sequence: state.nextSequence, receivedAt: date, message: message)
            state.nextSequence += 1
            state.entries.append(entry)
            state.bytes += message.payload.count
            while state.entries.count > 1, state.entries.count > capacity || state.bytes > maxBytes {
                state.bytes -= state.entries.removeFirst().message.payload.count
            }
            return entry
        }
    }

    /// Takes custody of a message from the router (appends it); the router
    /// acknowledges the hop after this returns.
    public func accept(_ message: InboundMessage) async throws {
        append(message)
    }

    /// Payload bytes held now.
    public var byteCount: Int { state.withLock { $0.bytes } }

    /// Messages with a sequence number above `after`, oldest first, at most `limit`
    /// (the newest ones when there are more).
    public func entries(after: Int = 0, limit: Int = .max) -> [Entry] {
        state.withLock { state in
            let newer = state.entries.filter { $0.sequence > after }
            return Array(newer.suffix(max(0, limit)))
        }
    }

    /// Messages held now.
    public var count: Int { state.withLock { $0.entries.count } }

    /// Messages received since the node started (including dropped ones).
    public var totalReceived: Int { state.withLock { $0.nextSequence - 1 } }
}
