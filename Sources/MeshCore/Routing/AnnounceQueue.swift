import DequeModule

/// A token bucket: `rate` tokens a second, at most `burst` held.
package struct AnnounceBudget: Sendable {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: ContinuousClock.Instant

    package init(rate: Double, burst: Int, now: ContinuousClock.Instant) {
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
        take(1, now: now)
    }

    /// Takes `count` tokens (at most the burst); false, taking none, when fewer are left.
    mutating func take(_ count: Int, now: ContinuousClock.Instant) -> Bool {
        refill(now)
        let count = min(Double(max(1, count)), burst)
        guard tokens >= count else { return false }
        tokens -= count
        return true
    }

    /// The tokens a routing frame of `bytes` encoded bytes costs: one per announcement's
    /// worth of wire bytes (``RoutingConfiguration/wireBits``), at least 1, at most the
    /// burst (so that any frame can leave).
    func cost(bytes: Int) -> Int {
        let perToken = RoutingConfiguration.wireBits / 8
        return min(Int(burst), max(1, (bytes + perToken - 1) / perToken))
    }

    /// When the next whole token is there: `now` when one is, nil when the rate is zero.
    func nextToken(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        nextTokens(1, now: now)
    }

    /// When `count` tokens (at most the burst) are there: `now` when they are, nil when
    /// the rate is zero.
    func nextTokens(_ count: Int, now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        var budget = self
        budget.refill(now)
        let count = min(Double(max(1, count)), burst)
        if budget.tokens >= count { return now }
        guard rate > 0 else { return nil }
        let seconds = (count - budget.tokens) / rate
        return now + .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }

    /// Whole tokens available now.
    mutating func available(now: ContinuousClock.Instant) -> Int {
        refill(now)
        return Int(tokens)
    }
}

/// The announcements waiting to go out on one link, at most one per origin (a newer
/// or shorter one replaces the one waiting), the route requests, at most one per
/// target (the one asking for the newer sequence wins), and at most one route summary,
/// one route listing and one route hops frame (the latest replaces the one waiting, but
/// a digest never a full summary); they leave as the link's budget allows: requests,
/// the summary, the listing, the hops, then announcements. A summary, listing or hops
/// frame costs a token per 140 bytes.
package struct AnnounceQueue: Sendable {
    private var pending: [PeerID: AnnounceFrame] = [:]
    private var order = Deque<PeerID>()
    /// Origins whose waiting announcement is passed on news (a better route learned),
    /// dropped when it leaves if the remote has told this node as much meanwhile.
    private var unlessKnown: Set<PeerID> = []
    private var requests: [PeerID: RouteRequestFrame] = [:]
    private var requestOrder = Deque<PeerID>()
    private var summary: RouteSummaryFrame?
    private var listing: RouteListingFrame?
    private var hops: RouteHopsFrame?
    var budget: AnnounceBudget

    package init(budget: AnnounceBudget) {
        self.budget = budget
    }

    package var isEmpty: Bool { pending.isEmpty && requests.isEmpty && summary == nil && listing == nil && hops == nil }

    /// Queues a route summary, replacing one waiting unless that one has more buckets
    /// (a digest does not replace the full summary a neighbour's digest asked for).
    mutating func add(_ summary: RouteSummaryFrame) {
        if let waiting = self.summary, waiting.bucketBits > summary.bucketBits { return }
        self.summary = summary
    }

    /// Queues a route listing, replacing one waiting.
    mutating func add(_ listing: RouteListingFrame) {
        self.listing = listing
    }

    /// Queues a route hops frame, replacing one waiting.
    mutating func add(_ hops: RouteHopsFrame) {
        self.hops = hops
    }

    /// When the budget lets the next waiting frame out; nil when none waits.
    func nextDue(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard !isEmpty else { return nil }
        return budget.nextTokens(nextFrame.map(cost) ?? 1, now: now)
    }

    /// The frame that leaves next when the budget allows: a request, the summary, the
    /// listing, the hops, then an announcement (nil when only announcements or requests
    /// wait: they cost one token each).
    private var nextFrame: Frame? {
        guard requests.isEmpty else { return nil }
        return summary.map(Frame.routeSummary) ?? listing.map(Frame.routeListing) ?? hops.map(Frame.routeHops)
    }

    /// The tokens `frame` costs: a summary, listing or hops frame one per 140 bytes,
    /// anything else 1.
    private func cost(_ frame: Frame) -> Int {
        switch frame {
        case .routeSummary(let summary): budget.cost(bytes: Frame.headerSize + summary.bodySize)
        case .routeListing(let listing): budget.cost(bytes: Frame.headerSize + listing.bodySize)
        case .routeHops(let hops): budget.cost(bytes: Frame.headerSize + hops.bodySize)
        default: 1
        }
    }

    /// Queues `frame`, replacing a waiting announcement of the same origin unless that
    /// one is newer, or as new and no longer. With `unlessKnown` (news passed on), it is
    /// dropped when it is its turn if the remote has told this node of the same origin
    /// as new and at most one hop further meanwhile (``take(now:known:)``); an answer
    /// (to a request or a listing) always goes.
    package mutating func add(_ frame: AnnounceFrame, unlessKnown: Bool = false) {
        if let waiting = pending[frame.origin] {
            let better =
                frame.sequence > waiting.sequence || (frame.sequence == waiting.sequence && frame.hops < waiting.hops)
            if better {
                pending[frame.origin] = frame
                if unlessKnown { self.unlessKnown.insert(frame.origin) } else { self.unlessKnown.remove(frame.origin) }
            } else if !unlessKnown {
                self.unlessKnown.remove(frame.origin)
            }
            return
        }
        pending[frame.origin] = frame
        order.append(frame.origin)
        if unlessKnown { self.unlessKnown.insert(frame.origin) }
    }

    /// Queues a route request, replacing a waiting one for the same target unless that
    /// one asks for a newer sequence already.
    mutating func add(_ request: RouteRequestFrame) {
        if let waiting = requests[request.target] {
            if request.sequence > waiting.sequence
                || (request.sequence == waiting.sequence && request.hopLimit > waiting.hopLimit)
            {
                requests[request.target] = request
            }
            return
        }
        requests[request.target] = request
        requestOrder.append(request.target)
    }

    /// The frames the budget lets out now: route requests, the summary, the listing,
    /// the hops, then announcements, oldest first. Passed-on news the remote turns out
    /// to know already (`known`: it told this node of that origin as new, at most one
    /// hop further) is dropped without using the budget; `dropped` counts those.
    package mutating func take(
        now: ContinuousClock.Instant,
        known: (AnnounceFrame) -> Bool = { _ in false },
        dropped: inout Int
    ) -> [Frame] {
        var out: [Frame] = []
        while !requestOrder.isEmpty, budget.take(now: now), let target = requestOrder.popFirst() {
            if let request = requests.removeValue(forKey: target) { out.append(.routeRequest(request)) }
        }
        guard requestOrder.isEmpty else { return out }
        while let frame = nextFrame {
            guard budget.take(cost(frame), now: now) else { return out }
            out.append(frame)
            switch frame {
            case .routeSummary: summary = nil
            case .routeListing: listing = nil
            case .routeHops: hops = nil
            default: break  // nextFrame gives nothing else
            }
        }
        while let origin = order.first {
            if let frame = pending[origin], unlessKnown.contains(origin), known(frame) {
                order.removeFirst()
                pending[origin] = nil
                unlessKnown.remove(origin)
                dropped += 1
                continue
            }
            guard budget.take(now: now) else { break }
            order.removeFirst()
            unlessKnown.remove(origin)
            if let frame = pending.removeValue(forKey: origin) { out.append(.announce(frame)) }
        }
        return out
    }

    /// ``take(now:known:dropped:)`` with nothing known.
    package mutating func take(now: ContinuousClock.Instant) -> [Frame] {
        var dropped = 0
        return take(now: now, dropped: &dropped)
    }
}
