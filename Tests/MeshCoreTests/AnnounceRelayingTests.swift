import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Which announcements a router passes on (docs/PROTOCOL.md §A.5, ANNOUNCE send rule 3),
/// seen from two raw neighbours X and Z speaking the wire protocol by hand: an
/// ignored announcement (a repeat) is not passed on, and an accepted one is not
/// queued for a neighbour that already told the router of the same sequence at most
/// one hop longer; a new link gets the router's latest announcement of itself, not a
/// new sequence for the whole mesh. Time is a ManualClock that never moves.
@Suite struct AnnounceRelayingTests {
    typealias RawPeer = ReceiverRulesTests.RawPeer

    /// A raw neighbour of R: its link, and the announcements R sent it, with PONGs.
    final class Neighbour: Sendable {
        let peer: PeerID
        let signer: TestReceiptSigner
        let raw: RawPeer
        let running: RunningTransport
        let seen = Seen()
        let drain: Task<Void, Never>

        /// What R sent: announcements, route requests, summaries, listings, hop counts and
        /// PONG nonces.
        final class Seen: Sendable {
            let announces = Mutex<[AnnounceFrame]>([])
            let requests = Mutex<[RouteRequestFrame]>([])
            let summaries = Mutex<[RouteSummaryFrame]>([])
            let listings = Mutex<[RouteListingFrame]>([])
            let hops = Mutex<[RouteHopsFrame]>([])
            let pongs = Mutex<Set<UInt64>>([])
        }

        /// A raw neighbour at `address`, as `peer`, linked to R.
        init(address: String, network: LoopbackNetwork, peer: PeerID = .random()) async throws {
            self.peer = peer
            signer = TestReceiptSigner(peer: peer)
            let transport = LoopbackTransport(
                name: "lo",
                address: address,
                network: network,
                configuration: .init(discovery: false)
            )
            running = try await RunningTransport.start(transport, localPeerID: peer)
            let raw = RawPeer(link: try await transport.dial(PeerHint(transport: "lo", address: "R")))
            try await raw.send(segment: Array("SCM0".utf8) + [Frame.version] + peer.bytes)
            _ = try await raw.link.receive()  // R's hello
            self.raw = raw
            drain = Task { [link = raw.link, seen] in
                var reader = RawPeer(link: link)
                while let segment = try? await reader.receiveSegment() {
                    switch try? Frame.decode(segment) {
                    case .announce(let frame): seen.announces.withLock { $0.append(frame) }
                    case .routeRequest(let frame): seen.requests.withLock { $0.append(frame) }
                    case .routeSummary(let frame): seen.summaries.withLock { $0.append(frame) }
                    case .routeListing(let frame): seen.listings.withLock { $0.append(frame) }
                    case .routeHops(let frame): seen.hops.withLock { $0.append(frame) }
                    case .pong(let nonce): _ = seen.pongs.withLock { $0.insert(nonce) }
                    default: break
                    }
                }
            }
        }

        func send(_ frame: Frame) async throws { try await raw.send(frame) }

        /// Pings R twice and waits for both PONGs: everything R queued for this link
        /// before the first PING arrived has been written by then.
        func sync(_ nonce: UInt64) async throws {
            for n in [nonce, nonce + 1] {
                try await send(.ping(nonce: n))
                try await waitUntil("PONG \(n)") { seen.pongs.withLock { $0.contains(n) } }
            }
        }

        func stop() async {
            drain.cancel()
            await running.stop()
        }
    }

    @Test(.timeLimit(.minutes(3))) func ignoredAnnouncementsAreNotPassedOnNorNewsToANeighbourThatHasIt() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        var logger = Logger(label: "r")
        logger.logLevel = .warning
        let r = PeerID.random()
        let configuration = RouterConfiguration(keepaliveInterval: .seconds(3600))
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: configuration,
            sealer: StandInSealer(peer: r),
            receipts: TestReceiptSigner(peer: r),
            clock: clock,
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        defer { run.cancel() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }

        let x = try await Neighbour(address: "X", network: network)
        defer { Task { await x.stop() } }
        try await waitUntil("R is linked to X") { await router.peers().count == 1 }
        try await x.sync(10)  // R's first announcement of itself has reached X
        let z = try await Neighbour(address: "Z", network: network)
        defer { Task { await z.stop() } }
        try await waitUntil("R is linked to Z") { await router.peers().count == 2 }

        // O is a node further away; its signer stands for its identity key.
        let o = PeerID.random()
        let signerO = TestReceiptSigner(peer: o)
        func announce(_ sequence: UInt64, hops: UInt8) -> Frame {
            AnnounceTests.announce(o, sequence, hops: hops, signer: signerO)
        }

        try await x.send(announce(10, hops: 2))  // accepted: passed on to Z at 3 hops
        try await x.send(announce(10, hops: 2))  // a repeat: ignored, not passed on
        try await waitUntil("R handled X's two announcements") {
            let stats = await router.stats()
            return stats.announcesAccepted + stats.announcesIgnored >= 2
        }
        try await z.send(announce(11, hops: 3))  // newer, through Z: passed on to X only
        try await waitUntil("R took Z's announcement") { await router.stats().announcesAccepted >= 2 }
        // X, at the same sequence, is shorter: R's route moves to X. Z is 2 hops from
        // O and R would offer it 3: not news to Z, so not queued for it.
        try await x.send(announce(11, hops: 2))
        try await waitUntil("R took X's shorter route") { await router.stats().announcesAccepted >= 3 }
        try await z.sync(100)
        try await x.sync(200)

        let stats = await router.stats()
        #expect(stats.announcesAccepted == 3)
        #expect(stats.announcesIgnored == 1)
        #expect(stats.announcesSuppressed == 1)
        let toZ = z.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } }
        #expect(toZ == [[10, 3]])
        let toX = x.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } }
        #expect(toX == [[11, 4]])
        // Z's link coming up did not make R announce itself anew: Z got the
        // announcement X had, X nothing more.
        let selfToX = x.seen.announces.withLock { $0.filter { $0.origin == r }.map(\.sequence) }
        let selfToZ = z.seen.announces.withLock { $0.filter { $0.origin == r }.map(\.sequence) }
        #expect(selfToX.count == 1)
        #expect(!selfToZ.isEmpty && Set(selfToZ) == Set(selfToX))
        let route = try #require(await router.routes().first { $0.destination == o })
        #expect(route.nextHop == x.peer && route.hops == 2 && route.sequence == 11)
    }

}
