import Logging
import Synchronization

// Routing frames and address records queued for the link, and the inbound budgets.
extension LinkSession {
    /// Queues a route announcement for this link; it goes out as the link's budget
    /// allows, replacing a waiting one of the same origin.
    /// Queues this node's address record for the remote (docs/PROTOCOL.md §A.7).
    func queueAddresses(_ record: AddressesFrame) {
        guard carries(.addresses) else { return }
        let closed = state.withLock { state -> Bool in
            guard state.closed == nil else { return true }
            state.addressesOwed = record
            return false
        }
        if !closed { controlSignal.yield() }
    }

    /// Counts an address record from the remote; false once it sent more than
    /// `limit` on this link (the rest are ignored).
    func takeInboundAddresses(limit: Int) -> Bool {
        state.withLock { state in
            state.inboundAddresses += 1
            return state.inboundAddresses <= limit
        }
    }

    /// Queues an announcement for this link. `unlessKnown` for news passed on: dropped
    /// when its turn comes if the remote has announced the same origin as new and at
    /// most one hop further on this link meanwhile (it is as close already).
    func queueAnnounce(_ frame: AnnounceFrame, unlessKnown: Bool = false) {
        guard carries(.announce) else { return }
        let closed = state.withLock { state -> Bool in
            guard state.closed == nil else { return true }
            state.announces.add(frame, unlessKnown: unlessKnown)
            return false
        }
        if !closed { controlSignal.yield() }
    }

    /// The most origins ``heard(_:)`` remembers per link (the route table's own bound):
    /// a neighbour announcing ever more made-up origins, each validly signed by a key
    /// of its own, cannot grow it further.
    static let maxHeardOrigins = 65_536

    /// Records a verified announcement the remote sent on this link that the route
    /// table took in (accepted or kept as an alternate).
    func heard(_ frame: AnnounceFrame) {
        state.withLock { state in
            if let held = state.heard[frame.origin] {
                if held.sequence > frame.sequence || (held.sequence == frame.sequence && held.hops <= frame.hops) {
                    return
                }
            } else if state.heard.count >= Self.maxHeardOrigins {
                return
            }
            state.heard[frame.origin] = (frame.sequence, frame.hops)
        }
    }

    /// Queues a route request for this link; it goes out as the link's announcement
    /// budget allows, ahead of waiting announcements.
    func queueRouteRequest(_ request: RouteRequestFrame) {
        guard carries(.routeRequest) else { return }
        let closed = state.withLock { state -> Bool in
            guard state.closed == nil else { return true }
            state.announces.add(request)
            return false
        }
        if !closed { controlSignal.yield() }
    }

    /// Queues a route summary, listing or hops frame for this link (replacing one of the
    /// same kind waiting); it goes out as the link's announcement budget allows.
    func queueRouteSync(_ frame: Frame) {
        guard carries(frame.kind) else { return }
        let closed = state.withLock { state -> Bool in
            guard state.closed == nil else { return true }
            switch frame {
            case .routeSummary(let summary): state.announces.add(summary)
            case .routeListing(let listing): state.announces.add(listing)
            case .routeHops(let hops): state.announces.add(hops)
            default: break
            }
            return false
        }
        if !closed { controlSignal.yield() }
    }

    /// Takes one token of the remote's announcement share; false when it is over it.
    func takeInboundAnnounceToken() -> Bool {
        let now = clock.now
        return state.withLock { $0.inboundAnnounces.take(now: now) }
    }

    /// Takes the tokens of the remote's announcement share that a routing frame of
    /// `bytes` encoded bytes costs (one per 140 bytes, at most the burst); false, taking
    /// none, when it is over its share.
    func takeInboundAnnounceTokens(bytes: Int) -> Bool {
        let now = clock.now
        return state.withLock { $0.inboundAnnounces.take($0.inboundAnnounces.cost(bytes: bytes), now: now) }
    }
}
