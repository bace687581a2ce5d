import Synchronization

/// What a node remembers about route requests (docs/PROTOCOL.md §A.5, "Route
/// requests"): the destinations it asks its neighbours about, with when to ask again;
/// the requests it forwarded (one per target and sequence per retry interval); the
/// neighbours waiting for the answer to a request it forwarded (``requesters``); and
/// when it last announced itself anew because a request asked for it.
struct RouteRequests: Sendable {
    /// The first wait between two asks for the same destination; it doubles with
    /// every ask, up to ``longestWait``.
    static let retry: Duration = .seconds(2)
    /// The longest wait between two asks.
    static let longestWait: Duration = .seconds(64)
    /// Asks per destination at the short waits (2, 4, … 64 s apart, then 64 s apart:
    /// ≈ 12 minutes in all) before the node slows to one every ``slowWait``. An answer
    /// can take several asks when requests cross many lossy hops, and with long refresh
    /// intervals nothing else repairs a route that was never learnt.
    static let attempts = 16
    /// The wait between two asks after ``attempts``, for as long as a message waits for
    /// the route: it bounds the wait of a message whose destination the fast asks did
    /// not bring within reach (every route its neighbours hold longer than `max_hops`
    /// allows, say), where the destination's next periodic announcement may be an hour
    /// away.
    static let slowWait: Duration = .seconds(300)
    /// Every this many asks, one goes to every neighbour even where some advertise the
    /// target (the others go to one neighbour at a time): an answer that the ranked
    /// neighbours cannot give (a dead end, a lost frame, a stale advertisement) is still
    /// sought the wide way.
    static let everyoneEvery = 3

    /// Where in the ranking of the neighbours that advertise the target the `ask`-th
    /// ask (1-based) goes: 0, 1, then every neighbour (nil), then 2, 3, nil, … (taken
    /// modulo the ranking's length by the caller).
    static func rankPosition(ofAsk ask: Int) -> Int? {
        guard ask % everyoneEvery != 0 else { return nil }
        return ask - 1 - (ask - 1) / everyoneEvery
    }

    /// The wait after the `asked`-th ask (1-based).
    static func wait(after asked: Int) -> Duration {
        if asked >= attempts { return slowWait }
        return asked >= 7 ? longestWait : min(longestWait, retry * (1 << (asked - 1)))
    }

    private struct Wanted {
        var asked = 0
        var next: ContinuousClock.Instant
    }

    private var wanted: [PeerID: Wanted] = [:]
    /// Per target, the newest request forwarded: its sequence, when, and when one at
    /// that sequence was last flooded.
    private var forwarded:
        [PeerID: (sequence: UInt64, at: ContinuousClock.Instant, flooded: ContinuousClock.Instant?)] = [:]
    private var reannouncedAt: ContinuousClock.Instant?
    /// The neighbours whose requests this node forwarded, waiting for the target's
    /// solicited announcement.
    var requesters = PendingRequesters()

    /// Records that a route to `target` is wanted; true when that is new (the asking
    /// loop should look now).
    mutating func want(_ target: PeerID, now: ContinuousClock.Instant) -> Bool {
        guard wanted[target] == nil else { return false }
        wanted[target] = Wanted(next: now)
        return true
    }

    /// A route to `target` appeared: stop asking.
    mutating func satisfied(_ target: PeerID) {
        wanted[target] = nil
    }

    /// The destinations due to be asked about now, each with the number of this ask
    /// (1 for the first); each is rescheduled (``wait(after:)``). An entry goes when
    /// its route appears or nothing waits for it any more (``satisfied(_:)``).
    mutating func takeDue(now: ContinuousClock.Instant) -> [(target: PeerID, ask: Int)] {
        var due: [(target: PeerID, ask: Int)] = []
        for (target, entry) in wanted where entry.next <= now {
            due.append((target, entry.asked + 1))
            wanted[target] = Wanted(asked: entry.asked + 1, next: now + Self.wait(after: entry.asked + 1))
        }
        return due
    }

    /// How many times `target` was asked about, and when the next ask is due; nil when
    /// no route to it is wanted.
    func asking(_ target: PeerID) -> (asked: Int, next: ContinuousClock.Instant)? {
        wanted[target].map { ($0.asked, $0.next) }
    }

    /// When the next ask is due; nil when no route is wanted.
    var nextDue: ContinuousClock.Instant? { wanted.values.map(\.next).min() }

    /// How long a node that flooded a request (sent it to every neighbour but the asker,
    /// knowing no way toward the target) floods none for the same target at that
    /// sequence or older. Every flood of a request crosses most links of the mesh within
    /// its hop limit, and the copies after the first are dropped as repeats; where the
    /// target is cut off or down, the askers' later asks (2, 4, 8 s … apart) would flood
    /// it again and again, and nothing can answer.
    static let floodHold: Duration = .seconds(16)

    /// Whether a request for `target` at `sequence` should be forwarded (`flooding`: to
    /// every neighbour but the asker): not when one for the same target, at that
    /// sequence or newer, was forwarded within ``retry``, nor, when `flooding`, flooded
    /// within ``floodHold``. Records it when it should.
    mutating func mayForward(
        _ target: PeerID,
        sequence: UInt64,
        flooding: Bool = false,
        now: ContinuousClock.Instant
    ) -> Bool {
        // Only a request at this sequence or newer holds this one back.
        let last = forwarded[target].flatMap { $0.sequence >= sequence ? $0 : nil }
        if let last {
            if now - last.at < Self.retry { return false }
            if flooding, let flooded = last.flooded, now - flooded < Self.floodHold { return false }
        }
        forwarded[target] = (sequence, now, flooding ? now : last?.flooded)
        // A flood is never later than the entry's last forward, so this keeps every
        // entry that can still hold a request back.
        if forwarded.count > 4096 { forwarded = forwarded.filter { now - $0.value.at < Self.floodHold } }
        return true
    }

    /// Whether this node may announce itself anew for a request: at most once per
    /// ``retry``. Records it when it may.
    mutating func mayReannounce(now: ContinuousClock.Instant) -> Bool {
        if let last = reannouncedAt, now - last < Self.retry { return false }
        reannouncedAt = now
        return true
    }
}

/// A settable "something happened for this peer" callback: the delivery pipeline's
/// route-wanted signal (set to ``Announcer/requestRoute(to:)``) and the announcer's
/// route-learned signal (set to the scheduler's drain). The closure sits in a struct:
/// a bare closure in a `Mutex` is re-wrapped in two reabstraction thunks by every
/// `withLock { $0 }`, so each call would walk a chain one level deeper than the last
/// (unbounded time and stack on a long-running node).
final class PeerCallback: Sendable {
    private struct Handler: Sendable {
        let call: @Sendable (PeerID) -> Void
    }

    private let handler = Mutex<Handler?>(nil)

    /// Sets what runs.
    func set(_ call: @escaping @Sendable (PeerID) -> Void) {
        handler.withLock { $0 = Handler(call: call) }
    }

    /// Runs it for `peer` (nothing before it is set).
    func callAsFunction(_ peer: PeerID) {
        handler.withLock { $0 }?.call(peer)
    }
}
