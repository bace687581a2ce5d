/// When each neighbour gets its next route summary (docs/PROTOCOL.md §A.5, "Route
/// summaries"), paced like a Trickle timer (RFC 6206): a neighbour gets one when its
/// link comes up and the next 2 × ``RoutingConfiguration/summaryInterval`` later;
/// every summary sent doubles the neighbour's interval, up to ``maxDoublings``
/// doublings (16 × at most); a sign that the two tables differ (a listing that had to
/// be sent, or repairs that followed one), or a change of this node's own table (a
/// route taken: Trickle's "new data"), sets it back to the shortest. Two
/// neighbours whose tables agree exchange fewer and fewer summaries; a difference
/// brings them back to the configured pace at once.
package struct SummaryTimers: Sendable {
    /// Doublings of the configured interval at most (4: the longest is 16 × it).
    package static let maxDoublings = 4

    private struct Timer {
        var doublings = 0
        var due: ContinuousClock.Instant
        /// How many times the neighbour's hop counts were taken on this link.
        var hopsTaken = 0
    }

    private var timers: [PeerID: Timer] = [:]
    /// The neighbours this node sent its hop counts to since it started, and how
    /// many times.
    private var hopsShared: [PeerID: Int] = [:]
    /// The most neighbours ``hopsShared`` remembers (then it starts afresh).
    static let maxHopsShared = 65_536
    /// How many times a neighbour gets this node's hop counts while it runs, and how
    /// many a link takes: two, at two matching summaries (at least one summary
    /// interval apart), so that a hop frame or an answer lost on the way, or a
    /// neighbour's route that shortened after the first, is caught by the second.
    package static let hopShares = 2

    /// No neighbour yet.
    package init() {}

    /// A link to `peer` came up (and sent it a summary): the next one is due at `due`,
    /// one doubled interval on.
    package mutating func linked(_ peer: PeerID, due: ContinuousClock.Instant) {
        timers[peer] = Timer(doublings: 1, due: due)
    }

    /// The last link to `peer` went.
    package mutating func lost(_ peer: PeerID) {
        timers[peer] = nil
    }

    /// The neighbours whose summary is due at `now`. Each is rescheduled one interval
    /// further, its interval doubled first (up to the longest): `interval(doublings)`
    /// gives the wait (the caller adds jitter).
    package mutating func takeDue(now: ContinuousClock.Instant, interval: (Int) -> Duration) -> [PeerID] {
        var due: [PeerID] = []
        for (peer, timer) in timers where timer.due <= now {
            due.append(peer)
            let doublings = min(timer.doublings + 1, Self.maxDoublings)
            timers[peer] = Timer(doublings: doublings, due: now + interval(doublings))
        }
        return due
    }

    /// The tables of this node and `peer` differ: its next summary is due within the
    /// shortest interval, and the doubling starts again.
    package mutating func differ(_ peer: PeerID, due: ContinuousClock.Instant) {
        guard var timer = timers[peer] else { return }
        timer.doublings = 0
        timer.due = min(timer.due, due)
        timers[peer] = timer
    }

    /// This node's table changed: every neighbour's next summary is due by `due`, and
    /// the doubling starts again.
    package mutating func differAll(due: ContinuousClock.Instant) {
        for peer in timers.keys { differ(peer, due: due) }
    }

    /// Whether this node may send `peer` its hop counts now (docs/PROTOCOL.md §A.5,
    /// "Route summaries", *Hop counts*): ``hopShares`` times per neighbour while this
    /// node runs, so true the first two times `peer` is linked and asks, false after
    /// that, while it is not linked, and after ``hopsNotNeeded(by:)``.
    package mutating func shareHops(with peer: PeerID) -> Bool {
        guard timers[peer] != nil else { return false }
        let shared = hopsShared[peer, default: 0]
        guard shared < Self.hopShares else { return false }
        setHopsShared(shared + 1, with: peer)
        return true
    }

    /// Whether this node takes `peer`'s hop counts now: ``hopShares`` times per link (an
    /// honest neighbour sends them that often per run), so that a neighbour repeating
    /// them cannot have this node send its routes again and again; false while it is
    /// not linked.
    package mutating func takeHops(from peer: PeerID) -> Bool {
        guard var timer = timers[peer], timer.hopsTaken < Self.hopShares else { return false }
        timer.hopsTaken += 1
        timers[peer] = timer
        return true
    }

    /// `peer` gets no hop counts while this node runs: it is a neighbour of the route
    /// table this node kept across a restart, whose routes the two compared before.
    package mutating func hopsNotNeeded(by peer: PeerID) {
        setHopsShared(Self.hopShares, with: peer)
    }

    /// Records that `peer` got this node's hop counts `times` times (``hopsShared``
    /// starts afresh when it is full and `peer` is new to it).
    private mutating func setHopsShared(_ times: Int, with peer: PeerID) {
        if hopsShared.count >= Self.maxHopsShared, hopsShared[peer] == nil { hopsShared.removeAll() }
        hopsShared[peer] = times
    }

    /// The earliest summary due; nil with no neighbour.
    package var nextDue: ContinuousClock.Instant? { timers.values.map(\.due).min() }

    /// The doublings of `peer`'s interval now (tests); nil when not linked.
    package func doublings(of peer: PeerID) -> Int? { timers[peer]?.doublings }
}
