/// The receiving side of a link's hop sequence numbers (docs/PROTOCOL.md §A.3, "Hop
/// sequence numbers and ACKs on the receiving side"): which DATA frames were recorded,
/// what the next ACK says, and when a number that will never be recorded stops holding
/// the cumulative point back.
///
/// A number can stay missing for two reasons: the frame was refused (not
/// acknowledged: a *hole*), or it never arrived (a lossy link: a *gap*). The sender
/// waits for neither longer than its longest ack timeout and then retries the chunk
/// with a new number, so once ``hold`` has passed since the refusal, or since a later
/// number arrived, every number below counts as consumed. Without that, one frame
/// lost on a link that stays up would pin the cumulative point for good: the ACKs'
/// selective lists fill up and, past ``maxOutOfOrder`` numbers, nothing more on the
/// link could ever be acknowledged.
///
/// A frame still being delivered (``delivering(_:)``, its commit not landed yet) is
/// never consumed that way: it is acknowledged only once it is recorded, and the
/// cumulative point waits below it until it is recorded or refused.
package struct ReceiveWindow: Sendable {
    /// The most numbers held above the cumulative point; a frame beyond it is handled
    /// but not recorded (its sender times out and its retry is acknowledged as a
    /// duplicate).
    package static let maxOutOfOrder = 4096
    /// The most marks kept (below); when they are all in use a new one replaces the
    /// newest, which only delays what that one would have consumed, never hastens it.
    static let maxMarks = 64

    private struct Hole {
        var messageID: MessageID
        var chunkIndex: UInt16
    }

    /// Every number up to this one was recorded or consumed.
    package private(set) var cumulative: UInt32 = 0
    /// Recorded numbers above ``cumulative``.
    private var above: Set<UInt32> = []
    /// Numbers recorded since the last ACK (at most ``Frame/maxSelectiveAcks``): the
    /// next ACK lists them first, so a frame that arrives while many older ones sit
    /// above a missing number is still acknowledged at once.
    private var fresh: [UInt32] = []
    /// Refused frames by number, for ``retried(_:)``.
    private var holes: [UInt32: Hole] = [:]
    /// Marks (*s*, *t*): every number below *s* may be consumed once ``hold`` has
    /// passed since *t*. One is made when a frame arrives above a number never seen
    /// (a gap opened below it) and when a frame is refused (its own number); in
    /// increasing order of both.
    private var marks: [(sequence: UInt32, at: ContinuousClock.Instant)] = []
    /// The highest number that arrived.
    private var highest: UInt32 = 0
    /// Numbers handed to delivery and not yet recorded or refused: ``expire(now:)``
    /// never moves the cumulative point over one of them.
    private var pending: Set<UInt32> = []
    /// Whether an ACK is owed.
    package private(set) var ackOwed = false
    /// How long after a later number arrived a missing one counts as consumed: longer
    /// than any sender waits for an acknowledgement (twice `ack_timeout_max_ms`).
    package let hold: Duration

    /// A window that consumes missing numbers `hold` after a later one arrived.
    package init(hold: Duration) {
        self.hold = hold
    }

    /// Notes that DATA frame `sequence` arrived at `now`, whatever becomes of it;
    /// call before ``record(_:)`` or ``refuse(_:)``. Returns the instant
    /// ``expire(now:)`` has something to do when this arrival made it so.
    @discardableResult
    package mutating func arrived(_ sequence: UInt32, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        defer { highest = max(highest, sequence) }
        guard sequence > 0, sequence - 1 > highest, sequence - 1 > cumulative else { return nil }
        return mark(sequence, at: now)
    }

    /// Adds a mark (see ``marks``) unless it would not be the highest; with no room
    /// left it replaces the newest (a later time and a higher number: what that one
    /// covered is consumed later, never sooner). Returns when it expires.
    private mutating func mark(_ sequence: UInt32, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard sequence > (marks.last?.sequence ?? 0) else { return nil }
        if marks.count < Self.maxMarks {
            marks.append((sequence, now))
        } else {
            marks[marks.count - 1] = (sequence, now)
        }
        return now + hold + .nanoseconds(1)
    }

    /// Notes that DATA frame `sequence` is handed to delivery; ``record(_:)`` or
    /// ``refuse(_:at:)`` ends that. Until then no expiry consumes it.
    package mutating func delivering(_ sequence: UInt32) {
        guard sequence > cumulative else { return }
        pending.insert(sequence)
    }

    /// The frames handed to delivery and not yet recorded or refused.
    package var inDelivery: Int { pending.count }

    /// Records an acknowledged frame's number (which ends its delivery); false when it
    /// is too far ahead to be recorded (no ACK is owed for it).
    @discardableResult
    package mutating func record(_ sequence: UInt32) -> Bool {
        pending.remove(sequence)
        if sequence <= cumulative || above.contains(sequence) {
            ackOwed = true  // a reused number: the sender gets the current state again
            return true
        }
        if sequence == cumulative + 1 {
            cumulative = sequence
            absorb()
        } else {
            guard above.count < Self.maxOutOfOrder else { return false }
            above.insert(sequence)
        }
        if fresh.count < Frame.maxSelectiveAcks { fresh.append(sequence) }
        ackOwed = true
        return true
    }

    /// Remembers a refused frame's number: it holds the cumulative point back until the
    /// chunk is retried on this link or ``hold`` passes. Returns when the hold ends, if
    /// this made a new mark.
    @discardableResult
    package mutating func refuse(_ frame: DataFrame, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        pending.remove(frame.sequence)
        guard frame.sequence > cumulative, frame.sequence < .max, !above.contains(frame.sequence),
            holes.count < Self.maxOutOfOrder
        else { return nil }
        holes[frame.sequence] = Hole(messageID: frame.messageID, chunkIndex: frame.chunkIndex)
        return mark(frame.sequence + 1, at: now)
    }

    /// An acknowledged frame retried a refused chunk (same message ID and chunk index):
    /// its sender gave up on the refused numbers, which are consumed now. Returns
    /// whether any were.
    @discardableResult
    package mutating func retried(_ frame: DataFrame) -> Bool {
        guard !holes.isEmpty else { return false }
        let matching = holes.filter { $0.value.messageID == frame.messageID && $0.value.chunkIndex == frame.chunkIndex }
            .keys
        for sequence in matching {
            holes[sequence] = nil
            record(sequence)
        }
        return !matching.isEmpty
    }

    /// Consumes every missing number below a number that arrived more than ``hold``
    /// before `now`, up to the lowest frame still being delivered (the marks beyond it
    /// wait for that delivery to end). Returns whether the cumulative point moved (an
    /// ACK is owed).
    @discardableResult
    package mutating func expire(now: ContinuousClock.Instant) -> Bool {
        guard let last = marks.lastIndex(where: { now - $0.at > hold }) else { return false }
        var through = marks[last].sequence - 1
        if let lowest = pending.min(), lowest <= through {
            through = lowest - 1
        } else {
            marks.removeFirst(last + 1)
        }
        guard through > cumulative else { return false }
        cumulative = through
        above = above.filter { $0 > through }
        absorb()
        ackOwed = true
        return true
    }

    /// When ``expire(now:)`` next has something to do (1 ns after the hold ends); nil
    /// while the number after the cumulative point is still being delivered (its
    /// ``record(_:)`` or ``refuse(_:at:)`` makes the marks due again).
    package var nextExpiry: ContinuousClock.Instant? {
        guard let first = marks.first else { return nil }
        if cumulative < .max, pending.contains(cumulative + 1) { return nil }
        return first.at + hold + .nanoseconds(1)
    }

    /// The ACK owed, which clears the debt: the cumulative point, then the numbers
    /// recorded since the last ACK, then the lowest others above the cumulative point,
    /// at most ``Frame/maxSelectiveAcks`` in all.
    package mutating func takeAck() -> AckFrame {
        ackOwed = false
        var selective = fresh.filter { $0 > cumulative }
        fresh.removeAll(keepingCapacity: true)
        if selective.count < Frame.maxSelectiveAcks, above.count > selective.count {
            let listed = Set(selective)
            let room = Frame.maxSelectiveAcks - selective.count
            selective += above.sorted().lazy.filter { !listed.contains($0) }.prefix(room)
        }
        return AckFrame(cumulative: cumulative, selective: selective)
    }

    /// Moves the cumulative point over the recorded numbers that follow it, and drops
    /// what it passed.
    private mutating func absorb() {
        while cumulative < .max, above.remove(cumulative + 1) != nil { cumulative += 1 }
        if !holes.isEmpty { holes = holes.filter { $0.key > cumulative } }
        while let first = marks.first, first.sequence - 1 <= cumulative { marks.removeFirst() }
    }
}
