import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Route requests (docs/PROTOCOL.md §A.5, "Route requests"): the frame's encoding; how a
/// router answers, forwards or drops a request, seen from two raw neighbours X and Z;
/// how it asks for a route a message waits for, and stops once one appears; and, with
/// real routers in a ring, that a node starved of a feasible route after a link goes is
/// given one by its destination's new sequence instead of waiting for the next refresh.
@Suite struct RouteRequestTests {
    typealias Neighbour = AnnounceRelayingTests.Neighbour

    @Test func theFrameRoundTripsAndMalformedOnesAreRejected() throws {
        let request = RouteRequestFrame(target: .random(), sequence: 0x0102_0304_0506_0708, hopLimit: 7)
        let bytes = Frame.routeRequest(request).encoded()
        #expect(bytes.count == 4 + RouteRequestFrame.bodySize)
        #expect(Array(bytes.prefix(4)) == [1, 0x09, 0, 0])
        #expect(Array(bytes[36..<44]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(try Frame.decode(bytes) == .routeRequest(request))
        #expect(request.forwarded().hopLimit == 6)
        for bad in [Array(bytes.dropLast()), bytes + [0], Array(bytes.dropLast()) + [0]] {
            #expect(throws: MeshError.self) { try Frame.decode(bad) }
        }
    }

    /// R holds a route to O through Z at sequence 10. X asks for O: at sequence 0 or
    /// 10 R answers with its route, one hop further; at 11 R forwards the request to Z
    /// (once per retry interval); Z asking gets nothing (R's route goes through Z, and
    /// passing the request on would be a second within the retry interval).
    /// Asked about itself, R answers with its latest announcement, or announces anew
    /// when a newer sequence is asked for.
    @Test(.timeLimit(.minutes(3))) func aRequestIsAnsweredForwardedOrMakesTheTargetAnnounceAnew() async throws {
        let setup = try await Self.routerWithXAndZ(clock: ManualClock())
        defer { Task { await setup.stop() } }
        let (router, r, x, z) = (setup.router, setup.r, setup.x, setup.z)
        let o = PeerID.random()
        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: TestReceiptSigner(peer: o)))
        try await waitUntil("R has a route to O") {
            await router.routes().contains { $0.destination == o }
        }
        try await x.sync(10)
        let before = x.seen.announces.withLock { $0.filter { $0.origin == o }.count }

        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 0, hopLimit: 7)))
        try await x.sync(12)  // else the two answers, waiting together, leave as one
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 10, hopLimit: 7)))
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 11, hopLimit: 7)))
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 11, hopLimit: 7)))  // a repeat
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 12, hopLimit: 1)))  // may not go on
        try await x.sync(14)  // X's first: Z's request then comes within the retry interval
        try await z.send(.routeRequest(RouteRequestFrame(target: o, sequence: 0, hopLimit: 7)))
        try await x.sync(20)
        try await z.sync(30)

        let answers = x.seen.announces.withLock {
            $0.filter { $0.origin == o }.dropFirst(before).map { [$0.sequence, UInt64($0.hops)] }
        }
        #expect(answers == [[10, 3], [10, 3]])
        let forwarded = z.seen.requests.withLock { $0 }
        #expect(forwarded == [RouteRequestFrame(target: o, sequence: 11, hopLimit: 6)])
        #expect(z.seen.announces.withLock { $0.filter { $0.origin == o } }.isEmpty)
        var stats = await router.stats()
        #expect(stats.routeRequests["answered"] == 2)
        #expect(stats.routeRequests["forwarded"] == 1)
        #expect(stats.routeRequests["dropped"] == 3)

        // About R itself.
        let own = try #require(x.seen.announces.withLock { $0.last { $0.origin == r } })
        try await x.send(.routeRequest(RouteRequestFrame(target: r, sequence: own.sequence, hopLimit: 7)))
        try await x.sync(40)
        #expect(x.seen.announces.withLock { $0.filter { $0.origin == r }.last } == own)
        try await x.send(.routeRequest(RouteRequestFrame(target: r, sequence: own.sequence + 1, hopLimit: 7)))
        try await x.sync(50)
        try await z.sync(60)
        let newer = try #require(x.seen.announces.withLock { $0.last { $0.origin == r } })
        #expect(newer.sequence > own.sequence && newer.hops == 1)
        #expect(z.seen.announces.withLock { $0.contains { $0.origin == r && $0.sequence == newer.sequence } })
        stats = await router.stats()
        #expect(stats.routeRequests["answered"] == 3)
        #expect(stats.routeRequests["reannounced"] == 1)
    }

    /// R has neighbours X, Y and Z and knows nothing of O, or only a route back through
    /// the asker: a request from X goes on to Y and Z both (flooded), once per retry
    /// interval; with a route to O through Z it goes to Z alone (forwarded).
    @Test(.timeLimit(.minutes(3))) func aRequestNoRouteLeadsOnGoesToEveryOtherNeighbour() async throws {
        let clock = ManualClock()
        let star = try await Self.routerWithXYZ(clock: clock)
        let (router, x, y, z) = (star.router, star.x, star.y, star.z)
        defer { Task { await star.stop() } }
        let o = PeerID.random()

        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 0, hopLimit: 7)))
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 0, hopLimit: 7)))  // a repeat
        for (n, nonce) in [(x, UInt64(10)), (y, 20), (z, 30)] { try await n.sync(nonce) }
        let flooded = RouteRequestFrame(target: o, sequence: 0, hopLimit: 6)
        #expect(y.seen.requests.withLock { $0 } == [flooded])
        #expect(z.seen.requests.withLock { $0 } == [flooded])
        #expect(x.seen.requests.withLock { $0 }.isEmpty)

        // Only a route back through the asker: still flooded (to X and Y, not Z).
        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: TestReceiptSigner(peer: o)))
        try await waitUntil("R has a route to O through Z") {
            await router.routes().contains { $0.destination == o && $0.nextHop == z.peer }
        }
        clock.advance(by: .seconds(3))
        try await z.send(.routeRequest(RouteRequestFrame(target: o, sequence: 11, hopLimit: 7)))
        for (n, nonce) in [(x, UInt64(40)), (y, 50), (z, 60)] { try await n.sync(nonce) }
        let again = RouteRequestFrame(target: o, sequence: 11, hopLimit: 6)
        #expect(x.seen.requests.withLock { $0 } == [again])
        #expect(y.seen.requests.withLock { $0 } == [flooded, again])
        #expect(z.seen.requests.withLock { $0 } == [flooded])

        // A route that leads on: forwarded to Z alone.
        clock.advance(by: .seconds(3))
        try await x.send(.routeRequest(RouteRequestFrame(target: o, sequence: 12, hopLimit: 7)))
        for (n, nonce) in [(x, UInt64(70)), (y, 80), (z, 90)] { try await n.sync(nonce) }
        #expect(z.seen.requests.withLock { $0.last } == RouteRequestFrame(target: o, sequence: 12, hopLimit: 6))
        #expect(y.seen.requests.withLock { $0.count } == 2)
        let stats = await router.stats()
        #expect(stats.routeRequests["flooded"] == 2)
        #expect(stats.routeRequests["forwarded"] == 1)
        #expect(stats.routeRequests["dropped"] == 1)
    }

    /// A message for O, whom R has no route to, makes R ask both neighbours (sequence
    /// 0: any route helps), and ask again after 2 s, then 4 s; once Z announces O, R
    /// asks no more.
    @Test(.timeLimit(.minutes(3))) func aMessageWithoutARouteMakesTheNodeAskUntilOneAppears() async throws {
        let clock = ManualClock()
        let setup = try await Self.routerWithXAndZ(clock: clock)
        defer { Task { await setup.stop() } }
        let (router, x, z) = (setup.router, setup.x, setup.z)
        let o = PeerID.random()
        _ = try await router.send(to: o, payload: [1, 2, 3])

        let first = RouteRequestFrame(target: o, sequence: 0, hopLimit: RoutingConfiguration().maxHops)
        try await waitUntil("R asked X and Z") {
            x.seen.requests.withLock { $0 } == [first] && z.seen.requests.withLock { $0 } == [first]
        }
        clock.advance(by: .milliseconds(1999))
        try await x.sync(10)
        #expect(x.seen.requests.withLock { $0.count } == 1)
        clock.advance(by: .milliseconds(1))
        try await waitUntil("R asked again after 2 s") {
            x.seen.requests.withLock { $0.count } == 2
        }
        clock.advance(by: .seconds(4))
        try await waitUntil("R asked again after 4 s more") {
            z.seen.requests.withLock { $0.count } == 3
        }
        #expect(await router.stats().routeRequests["asked"] == 3)

        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: TestReceiptSigner(peer: o)))
        try await waitUntil("R has a route to O through Z") {
            await router.routes().contains { $0.destination == o && $0.nextHop == z.peer }
        }
        clock.advance(by: .seconds(120))
        try await x.sync(20)
        try await z.sync(30)
        #expect(x.seen.requests.withLock { $0.count } == 3)
        #expect(z.seen.requests.withLock { $0.count } == 3)
    }

    /// While no route appears, R asks 2, 4, 8, 16, 32 and 64 s apart, then every 64 s,
    /// 16 times in all, and then every 300 s while the message waits.
    @Test(.timeLimit(.minutes(3))) func askingGoesOnEvery64SecondsThenEvery300After16Asks() async throws {
        let clock = ManualClock()
        let setup = try await Self.routerWithXAndZ(clock: clock)
        defer { Task { await setup.stop() } }
        let (router, x) = (setup.router, setup.x)
        _ = try await router.send(to: PeerID.random(), payload: [1])
        try await waitUntil("R asked X") { x.seen.requests.withLock { $0.count } == 1 }
        let waits = [2, 4, 8, 16, 32, 64] + Array(repeating: 64, count: 9)
        for (index, wait) in waits.enumerated() {
            clock.advance(by: .seconds(wait) - .milliseconds(1))
            try await x.sync(UInt64(100 + 2 * index))
            #expect(
                x.seen.requests.withLock { $0.count } == index + 1,
                "ask \(index + 2) came before its \(wait) s wait"
            )
            clock.advance(by: .milliseconds(1))
            try await waitUntil("ask \(index + 2) after \(wait) s") {
                x.seen.requests.withLock { $0.count } == index + 2
            }
        }
        clock.advance(by: .seconds(300) - .milliseconds(1))
        try await x.sync(200)
        #expect(x.seen.requests.withLock { $0.count } == 16)
        #expect(await router.stats().routeRequests["asked"] == 16)
        clock.advance(by: .milliseconds(1))
        try await waitUntil("ask 17 after 300 s") { x.seen.requests.withLock { $0.count } == 17 }
    }

    /// Ring N0–N1–N2–N3–N4–N0, refreshes an hour apart. N1 reaches N3 through N2 (2
    /// hops); N0 offers it a 3-hop alternate, which is not feasible. Cut N1–N2: N1 has
    /// no route it may use. Its message for N3 makes it ask; the request goes N0 → N4
    /// → N3, N3 announces a new sequence, and the message arrives through N0, once.
    @Test(.timeLimit(.minutes(3))) func aStarvedNodeGetsARouteFromItsDestinationsNewSequence() async throws {
        let routing = RoutingConfiguration(announceInterval: .seconds(3600), routeMaxAge: .seconds(7200))
        let ring = await RouterGraph.line(count: 5, routing: routing)
        defer { Task { await ring.stop() } }
        await ring[4].connect(to: PeerHint(transport: "lo", address: RouterGraph.address(0)))
        try await ring.waitForLinks()
        try await ring.waitUntil("N4 is linked to N0") {
            await ring[4].peers().contains { $0.peer == ring[0].localPeerID }
        }
        try await ring.waitForRoute(from: 1, to: 3, hops: 2)
        try await ring.waitForRoute(from: 0, to: 3, hops: 2)

        ring.network.partition(RouterGraph.address(1), RouterGraph.address(2))
        let target = ring[3].localPeerID
        try await ring.waitUntil("N1's route to N3 is gone") {
            await !ring[1].routes().contains { $0.destination == target }
        }
        let id = try await ring[1].send(to: target, payload: [42])
        #expect(try await ring[1].waitForStatus(of: id, until: .delivered, timeout: .seconds(60)).status == .delivered)
        #expect(ring.received(at: 3).map(\.id) == [id])
        let route = try #require(await ring[1].routes().first { $0.destination == target })
        #expect(route.nextHop == ring[0].localPeerID && route.hops == 3)
        #expect(await ring[3].stats().routeRequests["reannounced", default: 0] >= 1)
    }

    /// R (below) linked to raw neighbours: X and Z, or X, Y and Z.
    struct Setup {
        let router: Router
        let r: PeerID
        let run: Task<Void, any Error>
        /// X, (Y,) Z in that order.
        let neighbours: [Neighbour]
        let network: LoopbackNetwork

        var x: Neighbour { neighbours[0] }
        /// Y, of a set-up with three neighbours.
        var y: Neighbour { neighbours[1] }
        var z: Neighbour { neighbours[neighbours.count - 1] }

        func stop() async {
            run.cancel()
            for neighbour in neighbours { await neighbour.stop() }
        }
    }

    /// R linked to X and Z.
    static func routerWithXAndZ(clock: ManualClock) async throws -> Setup {
        try await routerWith(["X", "Z"], clock: clock)
    }

    /// R linked to X, Y and Z.
    static func routerWithXYZ(clock: ManualClock) async throws -> Setup {
        try await routerWith(["X", "Y", "Z"], clock: clock)
    }

    /// R (configured with `routing`) linked to a raw neighbour at each of `addresses`,
    /// once all links are up.
    static func routerWith(
        _ addresses: [String],
        clock: ManualClock,
        routing: RoutingConfiguration = .init()
    ) async throws -> Setup {
        let network = LoopbackNetwork()
        let (router, r, run) = try await Self.router(network: network, clock: clock, routing: routing)
        var neighbours: [Neighbour] = []
        for address in addresses { neighbours.append(try await Neighbour(address: address, network: network)) }
        try await waitUntil("R is linked to \(addresses.joined(separator: ", "))") {
            await router.peers().count == addresses.count
        }
        return Setup(router: router, r: r, run: run, neighbours: neighbours, network: network)
    }

    /// A router R (peer `r`) on the loopback network, running, with the default
    /// configuration (but for `routing`), `announceState` and `savedRoutes`.
    static func router(
        network: LoopbackNetwork,
        clock: ManualClock,
        routing: RoutingConfiguration = .init(),
        r: PeerID = .random(),
        announceState: (any AnnounceStateStore)? = nil,
        savedRoutes: (any RouteTableStore)? = nil
    ) async throws -> (Router, PeerID, Task<Void, any Error>) {
        var logger = Logger(label: "r")
        logger.logLevel = .warning
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: RouterConfiguration(keepaliveInterval: .seconds(3600), routing: routing),
            sealer: StandInSealer(peer: r),
            receipts: TestReceiptSigner(peer: r),
            clock: clock,
            announceState: announceState,
            savedRoutes: savedRoutes,
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }
        return (router, r, run)
    }
}
