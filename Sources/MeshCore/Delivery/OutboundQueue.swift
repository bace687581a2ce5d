import DequeModule
import Synchronization

/// Where the router keeps the messages this node sends, from ``Router/send(to:payload:)``
/// until they are delivered, failed or expired. The delivery pipeline takes (claims)
/// a message from the queue to send it and records every step, so that queued, sent
/// and delivered are distinct states; messages left queued (e.g. loaded by a
/// persistent queue after a restart) are claimed and sent when a link to their
/// destination comes up.
///
/// ``InMemoryOutboundQueue`` is the default; a persistent implementation (the node's
/// store) makes the outbox survive restarts.
public protocol OutboundQueue: Sendable {
    /// Stores a new message with status ``MessageStatus/queued``. Returns once it is
    /// kept (durably, for a persistent queue).
    /// - Throws: when the queue cannot take it (full, failing storage).
    func enqueue(_ message: OutboundMessage) async throws
    /// Takes a queued message for sending: nobody else can claim it until it is
    /// updated back to ``MessageStatus/queued`` or to a final status.
    /// - Returns: nil when it is not queued or already claimed.
    func claim(_ id: MessageID) async -> OutboundMessage?
    /// The queued, unclaimed messages for `destination`, oldest first.
    func waiting(for destination: PeerID) async -> [MessageID]
    /// Records that a message moved on (and releases its claim).
    /// - Parameters:
    ///   - transport: the transport of the hop that took it, when sent or delivered.
    ///   - reason: why, when it failed or expired.
    func update(_ id: MessageID, to status: MessageStatus, transport: String?, reason: String?) async
    /// The record of a message, while the queue remembers it.
    func record(_ id: MessageID) async -> OutboundRecord?
}

/// The in-memory outbound queue: every unfinished message with its payload, and the
/// records of the last finished ones (payloads released).
public final class InMemoryOutboundQueue: OutboundQueue {
    private struct State {
        var records: [MessageID: OutboundRecord] = [:]
        /// Unsent messages with their arrival number (for oldest-first order).
        var messages: [MessageID: (number: UInt64, message: OutboundMessage)] = [:]
        var nextNumber: UInt64 = 0
        var claimed: Set<MessageID> = []
        var finished: Deque<MessageID> = []
    }

    /// Finished records remembered for ``record(_:)``.
    public let historyLimit: Int
    private let state = Mutex(State())

    /// Creates an empty queue remembering up to `historyLimit` finished records.
    public init(historyLimit: Int = 4096) {
        self.historyLimit = max(0, historyLimit)
    }

    public func enqueue(_ message: OutboundMessage) async throws {
        state.withLock { state in
            state.records[message.id] = OutboundRecord(
                id: message.id, destination: message.destination, bytes: message.payload.count, status: .queued)
            state.nextNumber += 1
            state.messages[message.id] = (state.nextNumber, message)
        }
    }

    public func claim(_ id: MessageID) async -> OutboundMessage? {
        state.withLock { state in
            guard let entry = state.messages[id], state.records[id]?.status == .queued,
                  state.claimed.insert(id).inserted else { return nil }
            return entry.message
        }
    }

    public func waiting(for destination: PeerID) async -> [MessageID] {
        state.withLock { state in
            state.messages
                .filter { $0.value.message.destination == destination && !state.claimed.contains($0.key) && state.records[$0.key]?.status == .queued }
                .sorted { $0.value.number < $1.value.number }
                .map(\.key)
        }
    }

    public func update(_ id: MessageID, to status: MessageStatus, transport: String?, reason: String?) async {
        state.withLock { state in
            guard var record = state.records[id] else { return }
            let wasFinal = record.status.isFinal
            record.status = status
            if let transport { record.transport = transport }
            if let reason { record.reason = reason }
            state.records[id] = record
            state.claimed.remove(id)
            guard status.isFinal || status == .sent, !wasFinal else { return }
            // Sent or final: the payload is no longer this node's to send.
            state.messages[id] = nil
            guard status.isFinal else { return }
            state.finished.append(id)
            while state.finished.count > historyLimit, let oldest = state.finished.popFirst() {
                state.records[oldest] = nil
            }
        }
    }

    public func record(_ id: MessageID) async -> OutboundRecord? {
        state.withLock { $0.records[id] }
    }

    /// Messages not yet sent, delivered, failed or expired.
    public var pendingCount: Int {
        state.withLock { $0.messages.count }
    }
}
