import MeshCore
import MeshTesting
import Synchronization
import Testing

/// The route table's choices (docs/PROTOCOL.md §A.5) driven announcement by
/// announcement on a fixed instant: Babel's feasibility condition keeps a node from
/// falling back to a stale alternate that leads back through itself, the neighbour
/// check that stops useless re-announcements, and the refresh interval and route age
/// that stretch with the table.
@Suite struct RouteTableTests {
    static let now = ContinuousClock.now

    /// The neighbours a table's links reach.
    final class Live: Sendable {
        private let peers: Mutex<Set<PeerID>>
        init(_ peers: Set<PeerID>) { self.peers = Mutex(peers) }
        func contains(_ peer: PeerID) -> Bool { peers.withLock { $0.contains(peer) } }
        func remove(_ peer: PeerID) { _ = peers.withLock { $0.remove(peer) } }
        func add(_ peer: PeerID) { _ = peers.withLock { $0.insert(peer) } }
    }

    /// A table whose live neighbours are those `live` holds.
    static func table(_ live: Live) -> RouteTable {
        RouteTable(localPeerID: .random(), routing: RoutingConfiguration()) { live.contains($0) }
    }

    static func announce(_ origin: PeerID, _ sequence: UInt64, hops: UInt8) -> AnnounceFrame {
        AnnounceFrame(origin: origin, sequence: sequence, hops: hops, signature: [UInt8](repeating: 1, count: 64))
    }

    @Test func aStaleAlternateThatCouldLeadBackIsNotUsedUntilANewSequence() {
        // O ← A ← R, and B, on the far side, advertised O at 4 hops: B's own route to
        // O may well go through R (3 hops via R, +1). When A goes, taking B would loop.
        let (o, a, b) = (PeerID.random(), PeerID.random(), PeerID.random())
        let live = Live([a, b])
        let table = Self.table(live)
        #expect(
            table.consider(Self.announce(o, 5, hops: 2), from: a, transport: "lo", now: Self.now)
                == .accepted(changed: true, gained: true)
        )
        #expect(table.consider(Self.announce(o, 5, hops: 4), from: b, transport: "lo", now: Self.now) == .ignored)
        #expect(table.nextHop(for: o, now: Self.now) == a)

        live.remove(a)
        let (lost, rerouted) = table.neighbourLost(a, now: Self.now)
        #expect(lost == [o])
        #expect(rerouted.isEmpty)  // B (4 hops > the 2 this node had) is not feasible
        #expect(table.nextHop(for: o, now: Self.now) == nil)

        // B repeating the same sequence changes nothing; a new sequence of O does.
        #expect(table.consider(Self.announce(o, 5, hops: 3), from: b, transport: "lo", now: Self.now) == .ignored)
        #expect(table.nextHop(for: o, now: Self.now) == nil)
        #expect(
            table.consider(Self.announce(o, 6, hops: 4), from: b, transport: "lo", now: Self.now)
                == .accepted(changed: true, gained: true)
        )
        #expect(table.nextHop(for: o, now: Self.now) == b)
    }

    @Test func routesThroughANeighbourThatComesBackAreUsedAgainAtOnce() {
        // O ← A ← R: A's link goes (a flap, a partition) and comes back before the
        // route ages out. Its route was dormant meanwhile, not gone: R uses it again
        // without waiting for O's next sequence.
        let (o, a, b) = (PeerID.random(), PeerID.random(), PeerID.random())
        let live = Live([a, b])
        let table = Self.table(live)
        #expect(
            table.consider(Self.announce(o, 5, hops: 2), from: a, transport: "lo", now: Self.now)
                == .accepted(changed: true, gained: true)
        )
        #expect(table.consider(Self.announce(o, 5, hops: 4), from: b, transport: "lo", now: Self.now) == .ignored)
        live.remove(a)
        let (lost, rerouted) = table.neighbourLost(a, now: Self.now)
        #expect(lost == [o] && rerouted.isEmpty)
        #expect(table.nextHop(for: o, now: Self.now) == nil)
        #expect(table.neighbourBack(b, now: Self.now).isEmpty)

        live.add(a)
        #expect(table.neighbourBack(a, now: Self.now) == [o])
        #expect(table.nextHop(for: o, now: Self.now) == a)
        // A newer sequence from elsewhere while A was away outranks its dormant route.
        live.remove(a)
        _ = table.neighbourLost(a, now: Self.now)
        #expect(
            table.consider(Self.announce(o, 6, hops: 4), from: b, transport: "lo", now: Self.now)
                == .accepted(changed: true, gained: true)
        )
        live.add(a)
        #expect(table.neighbourBack(a, now: Self.now).isEmpty)
        #expect(table.nextHop(for: o, now: Self.now) == b)
        // Dormant routes still age out.
        let later = Self.now + RoutingConfiguration().routeMaxAge + .seconds(1)
        live.remove(a)
        live.remove(b)
        table.prune(now: later)
        live.add(a)
        #expect(table.neighbourBack(a, now: later).isEmpty)
    }

    @Test func anAlternateNoLongerThanTheRouteInUseTakesOver() {
        let (o, a, c) = (PeerID.random(), PeerID.random(), PeerID.random())
        let live = Live([a, c])
        let table = Self.table(live)
        _ = table.consider(Self.announce(o, 9, hops: 3), from: a, transport: "lo", now: Self.now)
        _ = table.consider(Self.announce(o, 9, hops: 3), from: c, transport: "lo", now: Self.now)
        let first = table.nextHop(for: o, now: Self.now)
        let other = first == a ? c : a
        live.remove(first!)
        let (lost, rerouted) = table.neighbourLost(first!, now: Self.now)
        #expect(lost == [o])
        #expect(rerouted == [o])
        #expect(table.nextHop(for: o, now: Self.now) == other)
    }

    @Test func aShorterRouteAtTheSameSequenceLowersTheFeasibilityDistance() {
        // Once R used a 2-hop route, a 3-hop alternate it had accepted before is no
        // longer feasible at that sequence.
        let (o, a, b) = (PeerID.random(), PeerID.random(), PeerID.random())
        let live = Live([a, b])
        let table = Self.table(live)
        #expect(
            table.consider(Self.announce(o, 3, hops: 3), from: b, transport: "lo", now: Self.now)
                == .accepted(changed: true, gained: true)
        )
        #expect(
            table.consider(Self.announce(o, 3, hops: 2), from: a, transport: "lo", now: Self.now)
                == .accepted(changed: true)
        )
        live.remove(a)
        _ = table.neighbourLost(a, now: Self.now)
        #expect(table.nextHop(for: o, now: Self.now) == nil)
    }

    @Test func aNeighbourThatToldTheSameSequenceAsShortIsKnownToHaveIt() {
        let (o, x) = (PeerID.random(), PeerID.random())
        let live = Live([x])
        let table = Self.table(live)
        _ = table.consider(Self.announce(o, 7, hops: 4), from: x, transport: "lo", now: Self.now)
        // X is 3 hops from O. Offering it 3 hops (or more) is useless, 2 is news.
        #expect(table.neighbour(x, knows: o, sequence: 7, within: 4))
        #expect(table.neighbour(x, knows: o, sequence: 7, within: 5))
        #expect(!table.neighbour(x, knows: o, sequence: 7, within: 3))
        #expect(!table.neighbour(x, knows: o, sequence: 8, within: 9))  // a newer sequence is news
        #expect(table.neighbour(x, knows: o, sequence: 6, within: 1))  // an older one is not
        #expect(!table.neighbour(x, knows: PeerID.random(), sequence: 1, within: 255))
    }

    @Test func refreshAndRouteAgeStretchWithTheTable() {
        let routing = RoutingConfiguration()  // 3600 s, 12,000 s, 10 a second
        #expect(routing.refreshInterval(origins: 10) == .seconds(3600))
        #expect(routing.refreshInterval(origins: 18_000) == .seconds(3600))
        #expect(routing.refreshInterval(origins: 20_000) == .seconds(4000))
        #expect(routing.routeMaxAge(origins: 1000) == .seconds(12_000))
        let stretched = routing.routeMaxAge(origins: 20_000)
        #expect(stretched > .seconds(13_333) && stretched < .seconds(13_334))
        let short = RoutingConfiguration(announceInterval: .seconds(60), routeMaxAge: .seconds(200))
        #expect(short.refreshInterval(origins: 300) == .seconds(60))
        #expect(short.refreshInterval(origins: 1000) == .seconds(200))
        let stretchedShort = short.routeMaxAge(origins: 1000)
        #expect(stretchedShort > .seconds(666) && stretchedShort < .seconds(667))
    }
}

/// The per-link announcement queue: news passed on that the neighbour turns out to
/// know already when its turn comes is dropped without spending the budget; answers
/// always go.
@Suite struct AnnounceQueueTests {
    @Test func passedOnNewsTheNeighbourAlreadyToldIsDroppedWhenItsTurnComes() {
        let now = ContinuousClock.now
        let (o, p, q) = (PeerID.random(), PeerID.random(), PeerID.random())
        var queue = AnnounceQueue(budget: AnnounceBudget(rate: 1, burst: 2, now: now))
        queue.add(RouteTableTests.announce(o, 5, hops: 3), unlessKnown: true)
        queue.add(RouteTableTests.announce(p, 5, hops: 3), unlessKnown: true)
        queue.add(RouteTableTests.announce(q, 5, hops: 3))  // an answer: always goes
        // Meanwhile the neighbour announced O at 5 in 4 hops (as close as 3 + 1) and
        // Q likewise; P only at 5 in 5 hops (3 is news to it).
        let heard: [PeerID: (sequence: UInt64, hops: UInt8)] = [o: (5, 4), p: (5, 5), q: (5, 4)]
        var dropped = 0
        let frames = queue.take(
            now: now,
            known: { frame in
                heard[frame.origin].map {
                    $0.sequence > frame.sequence || ($0.sequence == frame.sequence && $0.hops <= frame.hops + 1)
                } ?? false
            },
            dropped: &dropped
        )
        #expect(dropped == 1)
        // 2 tokens, O took none.
        #expect(frames.compactMap { if case .announce(let a) = $0 { a.origin } else { nil } } == [p, q])
        #expect(queue.isEmpty)

        // Queued as news, then again as an answer: it goes whatever the neighbour said.
        queue.add(RouteTableTests.announce(o, 6, hops: 2), unlessKnown: true)
        queue.add(RouteTableTests.announce(o, 6, hops: 2))
        var none = 0
        let later = now + .seconds(2)
        #expect(queue.take(now: later, known: { _ in true }, dropped: &none).count == 1)
        #expect(none == 0)
    }
}
