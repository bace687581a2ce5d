import DequeModule
import Synchronization

/// Topic frames waiting to go out on one link, written by the control loop beside
/// acknowledgements and announcements. Bounded: when full, the oldest frame goes
/// (gossip tolerates loss; IHAVE/IWANT fetches what a neighbour missed).
struct GossipOutbox: Sendable {
    private var frames = Deque<Frame>()

    var isEmpty: Bool { frames.isEmpty }

    /// Queues `frame`; returns how many older frames were dropped to make room.
    mutating func add(_ frame: Frame, capacity: Int) -> Int {
        frames.append(frame)
        var dropped = 0
        while frames.count > max(1, capacity) {
            frames.removeFirst()
            dropped += 1
        }
        return dropped
    }

    /// Takes up to `limit` frames, oldest first.
    mutating func take(limit: Int) -> [Frame] {
        var out: [Frame] = []
        while out.count < limit, let frame = frames.popFirst() { out.append(frame) }
        return out
    }
}

extension LinkSession {
    /// Queues a topic frame for this link; returns the number of older frames dropped
    /// (nothing is queued on a closed link).
    func queueGossip(_ frame: Frame, capacity: Int) -> Int {
        guard carries(frame.kind) else { return 0 }
        if case .topicMessage(let message) = frame, message.publishedMillis != nil, !shared.contains(.topicTime) {
            // Format 2 only where both ends announced `topic_time`: an earlier release
            // would misread its body and close the link (docs/PROTOCOL.md §A.7).
            stats.update { $0.framesWithheld["topic_message_v2", default: 0] += 1 }
            return 0
        }
        let (closed, dropped) = state.withLock { state -> (Bool, Int) in
            guard state.closed == nil else { return (true, 0) }
            return (false, state.gossip.add(frame, capacity: capacity))
        }
        if !closed { controlSignal.yield() }
        return dropped
    }

    /// The topic frames the control loop writes in one go.
    static let gossipBatch = 64
}
