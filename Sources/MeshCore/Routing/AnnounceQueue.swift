import DequeModule

/// A token bucket: `rate` tokens a second, at most `burst` held.
struct AnnounceBudget: Sendable {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant

    init(rate: Double, burst: Int, now: ContinuousClock.Instant) {
        self.rate = rate
        self.burst = Double(max(1, burst))
        self.tokens = self.burst
        self.last = now
    }

    private mutating func refill(_ now: ContinuousClock.Instant) {
        guard now > last else { return }
        tokens = min(burst, tokens + PriorityEscalationPolicy.seconds(now - last) * rate)
        last = now
    }

    /// Takes one token; false when none is left.
    mutating func take(now: ContinuousClock.Instant) -> Bool {
        refill(now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// When the next whole token is there: `now` when one is, nil when the rate is zero.
    func nextToken(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var budget = self
        budget.refill(now)
        if budget.tokens >= 1 { return now }
        guard rate > 0 else { return nil }
        let seconds = (1 - budget.tokens) / rate
        return now + .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// Whole tokens available now.
    mutating func available(now: ContinuousClock.Instant) -> Int {
        refill(now)
        return Int(tokens)
    }
}

/// The announcements waiting to go out on one link, at most one per origin (a newer
/// or shorter one replaces the one waiting), and the route requests, at most one per
/// target (the one asking for the newer sequence wins); both leave as the link's
/// budget allows, requests first.
struct AnnounceQueue: Sendable {
    private var pending: [PeerID: AnnounceFrame] = [:]
    private var order = Deque<PeerID>()
    private var requests: [PeerID: RouteRequestFrame] = [:]
    private var requestOrder = Deque<PeerID>()
    var budget: AnnounceBudget

    init(budget: AnnounceBudget) {
        self.budget = budget
    }

    var isEmpty: Bool { pending.isEmpty && requests.isEmpty }

    /// When the budget lets the next waiting frame out; nil when none waits.
    func nextDue(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        isEmpty ? nil : budget.nextToken(now: now)
    }

    /// Queues `frame`, replacing a waiting announcement of the same origin unless that
    /// one is newer, or as new and no longer.
    mutating func add(_ frame: AnnounceFrame) {
        if let waiting = pending[frame.origin] {
            let better = frame.sequence > waiting.sequence || (frame.sequence == waiting.sequence && frame.hops < waiting.hops)
            if better { pending[frame.origin] = frame }
            return
        }
        pending[frame.origin] = frame
        order.append(frame.origin)
    }

    /// Queues a route request, replacing a waiting one for the same target unless that
    /// one asks for a newer sequence already.
    mutating func add(_ request: RouteRequestFrame) {
        if let waiting = requests[request.target] {
            if request.sequence > waiting.sequence || (request.sequence == waiting.sequence && request.hopLimit > waiting.hopLimit) {
                requests[request.target] = request
            }
            return
        }
        requests[request.target] = request
        requestOrder.append(request.target)
    }

    /// The frames the budget lets out now: route requests, then announcements, oldest
    /// first.
    mutating func take(now: ContinuousClock.Instant) -> [Frame] {
        var out: [Frame] = []
        while !requestOrder.isEmpty, budget.take(now: now), let target = requestOrder.popFirst() {
            if let request = requests.removeValue(forKey: target) { out.append(.routeRequest(request)) }
        }
        while !order.isEmpty, budget.take(now: now), let origin = order.popFirst() {
            if let frame = pending.removeValue(forKey: origin) { out.append(.announce(frame)) }
        }
        return out
    }
}
