/// Tells a link whose remote stopped reading from one that is merely busy.
///
/// A link's writes suspend while the remote applies back-pressure; that is normal for a
/// moment. The link is *stalled* when a write is pending and no write has finished for
/// ``timeout``: the remote takes nothing at all (it never reads, or its side is wedged),
/// so every send to it would wait for ever. The session samples its write counters on
/// each tick and drops a stalled link (`link_write_stall_timeout_ms`).
///
/// The detector only sees counters and instants, so it is tested on its own. Given the
/// instant the pending write started (writes on a session go one at a time), it counts
/// the wait from there and tells the ticker when its next decision is due
/// (``nextDecision``), so the ticker need not look on a fixed period; without it, the
/// wait counts from the first observation. Either way a link is never dropped before a
/// write has waited ``timeout``.
struct WriteStallDetector: Sendable {
    /// How long a write may wait with no other write finishing before the link counts
    /// as stalled.
    let timeout: Duration
    /// How long a wait lasts before the link ranks as degraded (other links first).
    let degradeAfter: Duration

    private var finishedSeen = 0
    private var waitingSince: ContinuousClock.Instant?
    private var degradeReported = false

    /// What one observation found.
    enum Verdict: Equatable {
        /// No write pending, or writes are finishing.
        case flowing
        /// A write has been pending without progress for this long (below the timeout).
        case waiting(Duration)
        /// A write has been pending without progress for this long, newly past
        /// ``degradeAfter``: reported once per wait.
        case degraded(Duration)
        /// A write has been pending without progress for at least ``timeout``.
        case stalled(Duration)
    }

    /// Creates a detector; `degradeAfter` is clamped to `timeout`.
    init(timeout: Duration, degradeAfter: Duration) {
        self.timeout = timeout
        self.degradeAfter = min(degradeAfter, timeout)
    }

    /// Looks at the write counters at `now`.
    /// - Parameters:
    ///   - started: Writes (link sends) begun so far.
    ///   - finished: Writes that returned so far (with success or an error).
    ///   - pendingSince: When the pending write started, if known (at or before `now`).
    mutating func observe(
        started: Int,
        finished: Int,
        pendingSince: ContinuousClock.Instant? = nil,
        now: ContinuousClock.Instant
    ) -> Verdict {
        guard started > finished else {
            reset(finished)
            return .flowing
        }
        let since: ContinuousClock.Instant
        if let waiting = waitingSince, finished == finishedSeen {
            since = waiting
        } else {
            // A new wait, or writes finished since the last look: progress.
            reset(finished)
            since = min(pendingSince ?? now, now)
            waitingSince = since
            if since == now { return .waiting(.zero) }
        }
        let waited = now - since
        if waited >= timeout { return .stalled(waited) }
        if waited >= degradeAfter && !degradeReported {
            degradeReported = true
            return .degraded(waited)
        }
        return .waiting(waited)
    }

    /// When the next observation can change the verdict (the wait reaching
    /// ``degradeAfter``, then ``timeout``); nil while no write waits.
    var nextDecision: ContinuousClock.Instant? {
        guard let since = waitingSince else { return nil }
        return since + (degradeReported ? timeout : degradeAfter)
    }

    private mutating func reset(_ finished: Int) {
        finishedSeen = finished
        waitingSince = nil
        degradeReported = false
    }
}
