import Synchronization

/// Route summaries (docs/PROTOCOL.md §A.5, "Route summaries"): anti-entropy for
/// announcements. When a link comes up, and then on a per-neighbour timer that backs
/// off while nothing changes (``SummaryTimers``), a node sends each neighbour a digest:
/// one hash of the (origin, highest sequence) pairs it holds. A neighbour whose table
/// differs answers with its summary in buckets, the node lists its pairs in the
/// buckets that differ, and the neighbour sends the announcements the listing lacks or
/// lists older. A lost
/// announcement is repaired within an interval instead of waiting for its origin's
/// next refresh, and a link that comes up between nodes that know the same mesh costs
/// one summary instead of the whole table.
extension Announcer {
    /// Sends each neighbour a summary when its timer falls due (``SummaryTimers``: 2 ×
    /// ``summaryInterval`` (the configured one or a power profile's) after the one its link coming up got,
    /// then twice as long each time up to 16 ×, back to the shortest when the tables
    /// differ or this node takes a new route; each wait ± the announcement jitter),
    /// until the task is cancelled; nothing when the interval is zero.
    func runSummaries() async {
        guard isActive, configuration.summaryInterval > .zero else { return }
        while !Task.isCancelled {
            let now = clock.now
            let due = summaryTimers.withLock { $0.takeDue(now: now, interval: summaryWait) }
            if relay.isEnabled, !due.isEmpty {
                let summary = digest(now: now)
                for peer in due { queue(.routeSummary(summary), to: peer) }
            }
            let next = summaryTimers.withLock { $0.nextDue } ?? now + .seconds(3600)
            guard await summaryWaker.sleep(until: next, on: clock) else { return }
        }
    }

    /// The wait before the next summary after `doublings` doublings, with jitter.
    private func summaryWait(doublings: Int) -> Duration {
        let jitter = Double.random(in: -configuration.announceJitter...configuration.announceJitter)
        return summaryInterval.interval * Double(1 << doublings) * (1 + jitter)
    }

    /// A link to `peer` came up (and got a summary): the next one a doubled interval
    /// from now.
    func scheduleSummaries(to peer: PeerID) {
        guard configuration.summaryInterval > .zero else { return }
        let due = clock.now + summaryWait(doublings: 1)
        summaryTimers.withLock { $0.linked(peer, due: due) }
        summaryWaker.wake(before: due)
    }

    /// This node's table and `peer`'s differ: summaries to it go back to the shortest
    /// interval.
    private func tablesDiffer(from peer: PeerID) {
        guard configuration.summaryInterval > .zero else { return }
        let due = clock.now + summaryWait(doublings: 0)
        summaryTimers.withLock { $0.differ(peer, due: due) }
        summaryWaker.wake(before: due)
    }

    /// This node took a new route, or its route moved (Trickle's "new data"): its table
    /// may now differ from every neighbour's (an announcement of it lost on the way is
    /// repaired only by a summary), so summaries to all go back to the shortest
    /// interval. A refresh (the same route at a newer sequence) does not count. In a
    /// mesh whose routes keep changing they stay there; once nothing changes they back
    /// off.
    func tableChanged() {
        guard configuration.summaryInterval > .zero else { return }
        let due = clock.now + summaryWait(doublings: 0)
        summaryTimers.withLock { $0.differAll(due: due) }
        summaryWaker.wake(before: due)  // a no-op when the loop plans to wake sooner
    }

    /// Sends `peer` this node's digest (a link to it came up), as the periodic
    /// summaries do: a neighbour whose table matches answers nothing.
    func sendSummary(to peer: PeerID, now: ContinuousClock.Instant) {
        queue(.routeSummary(digest(now: now)), to: peer)
    }

    /// The (origin, sequence) pairs this node holds, its own included: per origin the
    /// highest sequence it took from an announcement without the solicited flag (else
    /// the highest), so that a new sequence passed only toward its requesters does not
    /// make every table along the way differ from its neighbours'.
    func summaryPairs(now: ContinuousClock.Instant) -> [(origin: PeerID, sequence: UInt64)] {
        var pairs = routes.highestSequences(now: now)
        if let own = summarisedOwnSequence { pairs.append((localPeerID, own)) }
        return pairs
    }

    /// This node's digest: one hash of the whole table (a summary of one bucket, 9 bytes
    /// however large the table).
    private func digest(now: ContinuousClock.Instant) -> RouteSummaryFrame {
        RouteSummaryFrame(bucketBits: 0, pairs: summaryPairs(now: now))
    }

    private func queue(_ frame: Frame, to peer: PeerID) {
        links.sessions(to: peer).first(where: { !$0.isClosed })?.queueRouteSync(frame)
    }

    /// Takes a neighbour's summary: where it matches this node's table, this node's hop
    /// counts go back, twice per neighbour (``matched(from:)``); where a bucket differs,
    /// a listing of this node's pairs in the differing buckets goes back (whole
    /// buckets, at most ``RouteListingFrame/maxPairs`` pairs). A digest (one bucket) that differs from a
    /// table this node would summarise in several is answered with this node's full
    /// summary instead of a listing of the whole table: the neighbour lists the
    /// buckets that differ, and gets what it lacks.
    func accept(_ summary: RouteSummaryFrame, from session: LinkSession) {
        guard session.takeInboundAnnounceTokens(bytes: Frame.headerSize + summary.bodySize) else {
            return count("rateLimited")
        }
        guard isActive, relay.isEnabled else { return count("dropped") }
        let bits = summary.bucketBits
        let held = summaryPairs(now: clock.now)
        let ours = RouteSummaryFrame(bucketBits: bits, pairs: held)
        guard ours.hashes != summary.hashes else { return matched(from: session) }
        let ownBits = RouteSummaryFrame.bucketBits(for: held.count)
        if bits == 0, ownBits > 0 {
            session.queueRouteSync(.routeSummary(RouteSummaryFrame(bucketBits: ownBits, pairs: held)))
            tablesDiffer(from: session.remote)
            return count("expanded")
        }
        var buckets = [[RouteListingFrame.Pair]](repeating: [], count: summary.hashes.count)
        for pair in held {
            buckets[RouteSummaryFrame.bucket(of: pair.origin, bits: bits)].append(
                RouteListingFrame.Pair(origin: pair.origin, sequence: pair.sequence)
            )
        }
        var listed: [Int] = []
        var pairs: [RouteListingFrame.Pair] = []
        for (index, bucket) in buckets.enumerated() where ours.hashes[index] != summary.hashes[index] {
            guard pairs.count + bucket.count <= RouteListingFrame.maxPairs else { break }
            listed.append(index)
            pairs += bucket
        }
        guard !listed.isEmpty else { return count("matched") }
        session.queueRouteSync(.routeListing(RouteListingFrame(bucketBits: bits, buckets: listed, pairs: pairs)))
        tablesDiffer(from: session.remote)
        count("listed")
    }

    /// Takes a neighbour's listing: every origin of the listed buckets that this node
    /// holds at a higher sequence than listed (or that the listing lacks) gets this
    /// node's route in use sent, one hop further, when it has one that does not go
    /// through that neighbour (for this node itself, ``latestUnsolicited``).
    func accept(_ listing: RouteListingFrame, from session: LinkSession) {
        guard session.takeInboundAnnounceTokens(bytes: Frame.headerSize + listing.bodySize) else {
            return count("rateLimited")
        }
        guard isActive, relay.isEnabled else { return count("dropped") }
        let now = clock.now
        let covered = Set(listing.buckets)
        var theirs: [PeerID: UInt64] = [:]
        for pair in listing.pairs { theirs[pair.origin] = max(theirs[pair.origin] ?? 0, pair.sequence) }
        var repaired = 0
        for pair in summaryPairs(now: now) where pair.origin != session.remote {
            guard covered.contains(RouteSummaryFrame.bucket(of: pair.origin, bits: listing.bucketBits)) else {
                continue
            }
            if let held = theirs[pair.origin], held >= pair.sequence { continue }
            let frame: AnnounceFrame?
            if pair.origin == localPeerID {
                frame = latestUnsolicited
            } else {
                frame = routes.answer(
                    for: pair.origin,
                    atLeast: theirs[pair.origin].map { $0 &+ 1 } ?? 0,
                    to: session.remote,
                    maxHops: configuration.maxHops,
                    now: now
                )
            }
            guard let frame else { continue }
            session.queueAnnounce(frame)
            repaired += 1
        }
        if repaired > 0 {
            stats.update { $0.routeSummaries["repaired", default: 0] += repaired }
            tablesDiffer(from: session.remote)
        }
    }

    private func count(_ what: String) {
        stats.update { $0.routeSummaries[what, default: 0] += 1 }
    }
}
