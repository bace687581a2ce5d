import Synchronization

/// Route requests (docs/PROTOCOL.md §A.5, "Route requests"): a node with messages for a
/// destination it has no usable route to asks a neighbour that advertises it (or,
/// where none does, every neighbour); a neighbour with a route
/// new enough sends it back, one that has none forwards the request toward the
/// destination, and the destination announces itself with a new sequence. This ends
/// Babel's *starvation*: after a link goes, feasibility may leave a node without any
/// route it may use until the destination's next periodic announcement.
extension Announcer {
    /// A message waits for a route to `target`: ask the neighbours now (unless already
    /// asking), and again with a doubling wait while none appears.
    func requestRoute(to target: PeerID) {
        guard isActive, relay.isEnabled, target != localPeerID else { return }
        let now = clock.now
        guard routes.nextHop(for: target, now: now) == nil else { return }
        if requests.withLock({ $0.want(target, now: now) }) { requestWaker.wake(before: now) }
    }

    /// Asks the neighbours for the routes wanted, when due, until the task is cancelled.
    func runRequests() async {
        guard isActive else { return }
        while !Task.isCancelled {
            let now = clock.now
            for due in requests.withLock({ $0.takeDue(now: now) }) {
                // Nothing waits for it any more (delivered, expired, handed on): stop
                // asking; the next message for it starts again.
                if await !stillWaiting(due.target) {
                    requests.withLock { $0.satisfied(due.target) }
                    count("unwanted")
                    continue
                }
                ask(due.target, number: due.ask, now: clock.now)
            }
            let next = requests.withLock { $0.nextDue } ?? now + .seconds(3600)
            guard await requestWaker.sleep(until: next, on: clock) else { return }
        }
    }

    /// Asks for a route to `target` (the `number`-th ask): of one neighbour, where live
    /// neighbours advertise the target (the best-ranked at the first ask, the next at
    /// the next, round the ranking), but every ``RouteRequests/everyoneEvery``-th ask
    /// and wherever none advertises it, of every neighbour.
    private func ask(_ target: PeerID, number: Int, now: ContinuousClock.Instant) {
        guard relay.isEnabled, routes.nextHop(for: target, now: now) == nil else {
            requests.withLock { $0.satisfied(target) }
            return
        }
        let request = RouteRequestFrame(
            target: target,
            sequence: routes.highestSequence(of: target, now: now).map { $0 &+ 1 } ?? 0,
            hopLimit: configuration.maxHops
        )
        let live = { (peer: PeerID) in self.links.sessions(to: peer).first(where: { !$0.isClosed }) }
        let position = RouteRequests.rankPosition(ofAsk: number)
        let ranked = position == nil ? [] : routes.requestCandidates(for: target, now: now).compactMap(live)
        let asking: [LinkSession]
        if let position, !ranked.isEmpty {
            asking = [ranked[position % ranked.count]]
        } else {
            asking = links.peers.compactMap(live)
        }
        for session in asking { session.queueRouteRequest(request) }
        guard !asking.isEmpty else { return }
        stats.update { stats in
            stats.routeRequests["asked", default: 0] += 1
            if !ranked.isEmpty { stats.routeRequests["askedOne", default: 0] += 1 }
        }
    }

    /// Takes a route request that arrived on `session`.
    func accept(_ request: RouteRequestFrame, from session: LinkSession) {
        guard session.takeInboundAnnounceToken() else { return count("rateLimited") }
        guard isActive, relay.isEnabled else { return count("dropped") }
        let now = clock.now
        if request.target == localPeerID {
            if let own = latestAnswer, own.sequence >= request.sequence {
                session.queueAnnounce(own)
                return count("answered")
            }
            guard requests.withLock({ $0.mayReannounce(now: now) }) else { return count("dropped") }
            // Solicited: the relays that forwarded the request pass it back toward the
            // requesters, not to the whole mesh (docs/PROTOCOL.md §A.5).
            originate(solicited: true)
            return count("reannounced")
        }
        // The request crossed `max_hops` − hop limit + 1 links to get here: a route of as
        // many hops as the hop limit or more would reach the asker beyond `max_hops`,
        // and the asker would drop it; the request goes on instead, to a node nearer
        // the target (rules 3 and 4).
        let reach = min(configuration.maxHops, request.hopLimit)
        if var answer = routes.answer(
            for: request.target,
            atLeast: request.sequence,
            to: session.remote,
            maxHops: reach,
            now: now
        ) {
            answer.solicited = true
            session.queueAnnounce(answer)
            return count("answered")
        }
        guard request.hopLimit > 1 else { return count("dropped") }
        // This node holds the sequence asked for, or a newer one, and still could not
        // answer (its route is too long for the asker, or goes through it): an answer
        // of an older sequence would stop at this node and at every node that took the
        // newer one, so what goes on asks for a sequence above it (rule 4), which only
        // the target can give, and gives along the request's own path.
        var onwardRequest = request.forwarded()
        if let held = routes.highestSequence(of: request.target, now: now), held >= request.sequence {
            onwardRequest.sequence = held &+ 1
        }
        // Toward the target where this node knows a way; else to every other neighbour:
        // where every route this node knows goes back through the asker (a dead end
        // after a link went), only a wider search reaches a node that can ask the
        // target for a new sequence.
        let toward = routes.requestHop(for: request.target, except: session.remote, below: request.hopLimit, now: now)
            .flatMap { hop in links.sessions(to: hop).first(where: { !$0.isClosed }) }
        let onward =
            toward.map { [$0] }
            ?? links.peers.filter { $0 != session.remote }
            .compactMap { peer in links.sessions(to: peer).first(where: { !$0.isClosed }) }
        guard !onward.isEmpty else { return count("dropped") }
        // Forwarded, or a repeat of a request forwarded already: either way the
        // target's answer is owed to this neighbour too.
        let forward = requests.withLock { requests in
            requests.requesters.record(request.target, from: session.remote, sequence: request.sequence, now: now)
            return requests.mayForward(
                request.target,
                sequence: onwardRequest.sequence,
                flooding: toward == nil,
                now: now
            )
        }
        guard forward else { return count("dropped") }
        for link in onward { link.queueRouteRequest(onwardRequest) }
        count(toward == nil ? "flooded" : "forwarded")
    }

    /// What this node holds about `target`, for explaining a message held for want of a
    /// route (the simulator's report): its entry (highest and summarised sequence,
    /// feasibility distance, age), each neighbour's advertisement (sequence, hops, age,
    /// whether its link is up) and whether it is still asking.
    func routeDiagnosis(for target: PeerID, name: (PeerID) -> String) -> String {
        let now = clock.now
        var text =
            "asking: "
            + (requests.withLock { $0.asking(target) }.map { "\($0.asked) asks, next in \($0.next - now)" } ?? "no")
        guard let entry = routes.entry(for: target, now: now) else { return text + "; no entry" }
        text += "; highest \(entry.highest & 0xFFFFF) (summarised \(entry.summarised.map { "\($0 & 0xFFFFF)" } ?? "-"))"
        text += ", fd \(entry.feasibilityDistance), age \(entry.age); adverts"
        for ad in entry.advertisements.sorted(by: { $0.hops < $1.hops }) {
            let live = links.sessions(to: ad.neighbour).contains { !$0.isClosed }
            text +=
                " \(name(ad.neighbour)):\(ad.sequence & 0xFFFFF)/\(ad.hops) \(Int(PriorityEscalationPolicy.seconds(ad.age))) s\(live ? "" : " down")"
        }
        return text
    }

    private func count(_ what: String) {
        stats.update { $0.routeRequests[what, default: 0] += 1 }
    }
}
