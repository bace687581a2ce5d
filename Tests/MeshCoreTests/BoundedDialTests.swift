import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Addresses someone else gave (an invitation, an address record) are dialled a
/// bounded number of times, and not at all once their peer is forgotten.
@Suite struct BoundedDialTests {
    /// The loopback transport, counting the dials to each address.
    final class CountingTransport: Transport {
        let base: LoopbackTransport
        init(base: LoopbackTransport) { self.base = base }
        let dials = Mutex<[String: Int]>([:])
        var name: String { base.name }
        var capabilities: TransportCapabilities { base.capabilities }
        func listen(context: TransportContext) async throws { try await base.listen(context: context) }
        func dial(_ hint: PeerHint) async throws -> any Link {
            dials.withLock { $0[hint.address, default: 0] += 1 }
            return try await base.dial(hint)
        }
        func count(_ address: String) -> Int { dials.withLock { $0[address] ?? 0 } }
    }

    static func router(clock: ManualClock) async throws -> (Router, CountingTransport, Task<Void, any Error>) {
        var logger = Logger(label: "r")
        logger.logLevel = .warning
        let r = PeerID.random()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: RouterConfiguration(keepaliveInterval: .seconds(3600)),
            sealer: StandInSealer(peer: r),
            receipts: TestReceiptSigner(peer: r),
            clock: clock,
            logger: logger
        )
        let transport = CountingTransport(
            base: LoopbackTransport(
                name: "lo",
                address: "R",
                network: LoopbackNetwork(),
                configuration: .init(discovery: false)
            )
        )
        await router.add(transport, priority: 10)
        let run = Task { try await router.run() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }
        return (router, transport, run)
    }

    @Test(.timeLimit(.minutes(3))) func aGivenAddressIsDialledABoundedNumberOfTimes() async throws {
        let clock = ManualClock()
        let (router, transport, run) = try await Self.router(clock: clock)
        defer { run.cancel() }
        let events = await router.events()
        await router.connect(
            to: PeerHint(transport: "lo", address: "nowhere", peerID: .random()),
            maxFailures: Router.requestedDialFailureLimit
        )
        let gaveUp = Mutex(false)
        let lost = Task {
            for await event in events where event.kind == .peerLost && event.address == "nowhere" {
                gaveUp.withLock { $0 = true }
                return true
            }
            return false
        }
        // Each round lets the backoff (at most 30 s) run out; the hint is lost after
        // the limit of failures in a row and the persistence time, not before.
        let start = clock.now
        try await eventually("the router gives up on the address", attempts: 3_000) {
            clock.advance(by: .seconds(31))
            return gaveUp.withLock { $0 }
        }
        #expect(await lost.value)
        #expect(transport.count("nowhere") >= Router.requestedDialFailureLimit)
        #expect(start.duration(to: clock.now) >= Router.requestedDialPersistence)
        let dialled = transport.count("nowhere")
        for _ in 0..<10 { clock.advance(by: .seconds(31)) }
        await clock.waitForSleepers(atLeast: 1)
        #expect(transport.count("nowhere") <= dialled + 1, "at most the dial already under way")
    }

    @Test(.timeLimit(.minutes(3))) func aForgottenPeersAddressIsDialledNoMore() async throws {
        let clock = ManualClock()
        let (router, transport, run) = try await Self.router(clock: clock)
        defer { run.cancel() }
        let peer = PeerID.random()
        let events = await router.events()
        await router.connect(to: PeerHint(transport: "lo", address: "gone", peerID: peer), maxFailures: 1000)
        // The dial loop may be waiting on the clock (a backoff) before its first dial.
        try await eventually("a first dial") {
            clock.advance(by: .seconds(1))
            return transport.count("gone") >= 1
        }
        let lost = Task {
            for await event in events where event.kind == .peerLost && event.address == "gone" { return true }
            return false
        }
        await router.forget(peer: peer)
        #expect(await lost.value)
        let dialled = transport.count("gone")
        for _ in 0..<10 { clock.advance(by: .seconds(31)) }
        await clock.waitForSleepers(atLeast: 1)
        #expect(transport.count("gone") <= dialled + 1, "at most the dial already under way")
    }

    @Test func addressFamilies() {
        let v4 = ["127.0.0.1:7000"]
        #expect(AddressFamily.admits("10.0.0.2:7000", listeningOn: v4))
        #expect(!AddressFamily.admits("[::1]:7000", listeningOn: v4))
        #expect(!AddressFamily.admits("evil.example:7000", listeningOn: v4))
        #expect(!AddressFamily.admits("10.0.0.2", listeningOn: v4))
        #expect(AddressFamily.admits("[fe80::1]:7000", listeningOn: ["[::]:7000"]))
        #expect(AddressFamily.admits("AA:BB:CC:DD:EE:FF", listeningOn: ["11:22:33:44:55:66"]))
    }
}
