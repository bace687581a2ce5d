import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// Transports switched off and on while the router runs, and dialling an address now.
@Suite struct TransportControlTests {
    static func router(
        _ address: String,
        network: LoopbackNetwork,
        clock: ManualClock
    ) async throws -> (Router, Task<Void, any Error>) {
        var logger = Logger(label: address)
        logger.logLevel = .warning
        let peer = PeerID.random()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: peer),
            configuration: RouterConfiguration(keepaliveInterval: .seconds(3600)),
            sealer: StandInSealer(peer: peer),
            receipts: TestReceiptSigner(peer: peer),
            clock: clock,
            logger: logger
        )
        await router.add(transport(address, network: network), priority: 10)
        let run = Task { try await router.run() }
        try await eventually("\(address) runs") { await router.transportStatus().first?.state == .running }
        return (router, run)
    }

    static func transport(_ address: String, network: LoopbackNetwork) -> LoopbackTransport {
        LoopbackTransport(name: "lo", address: address, network: network, configuration: .init(discovery: false))
    }

    @Test(.timeLimit(.minutes(3))) func dialReturnsThePeerOrWhyNot() async throws {
        let (network, clock) = (LoopbackNetwork(), ManualClock())
        let (a, runA) = try await Self.router("A", network: network, clock: clock)
        defer { runA.cancel() }
        let (b, runB) = try await Self.router("B", network: network, clock: clock)
        defer { runB.cancel() }

        let peer = try await a.dial(PeerHint(transport: "lo", address: "B"), timeout: .seconds(30))
        #expect(peer == b.localPeerID)
        #expect(await a.peers().map(\.peer) == [b.localPeerID])

        let unknown = await #expect(throws: MeshError.self) {
            try await a.dial(PeerHint(transport: "pigeon", address: "B"), timeout: .seconds(30))
        }
        #expect(unknown?.code == .invalidArgument)
        #expect(unknown?.message.contains("pigeon") == true && unknown?.message.contains("lo") == true)
        let nowhere = await #expect(throws: MeshError.self) {
            try await a.dial(PeerHint(transport: "lo", address: "nowhere"), timeout: .seconds(30))
        }
        #expect(nowhere?.code == .dialFailed, "\(String(describing: nowhere))")
    }

    @Test(.timeLimit(.minutes(3))) func aDisabledTransportStopsAndAnEnabledOneLinksAgain() async throws {
        let (network, clock) = (LoopbackNetwork(), ManualClock())
        let (a, runA) = try await Self.router("A", network: network, clock: clock)
        defer { runA.cancel() }
        let (b, runB) = try await Self.router("B", network: network, clock: clock)
        defer { runB.cancel() }
        _ = try await a.dial(PeerHint(transport: "lo", address: "B"), timeout: .seconds(30))

        try await b.disableTransport(named: "lo")
        #expect(await b.transportStatus().first?.state == .disabled)
        #expect(await b.isTransportDisabled("lo"))
        try await eventually("the link is gone at both ends") {
            let (atA, atB) = (await a.peers(), await b.peers())
            return atA.isEmpty && atB.isEmpty
        }
        // Nothing listens at B: a dial fails.
        let refused = await #expect(throws: MeshError.self) {
            try await a.dial(PeerHint(transport: "lo", address: "B"), timeout: .seconds(30))
        }
        #expect(refused?.code == .dialFailed)
        await #expect(throws: MeshError.self) { try await b.disableTransport(named: "nosuch") }

        // A new instance runs in its place; A's kept address links them again.
        try await b.enableTransport(Self.transport("B", network: network))
        try await eventually("B's transport runs again") { await b.transportStatus().first?.state == .running }
        // One backoff's worth of time at once, then real time for the dial and handshake
        // (advancing the clock meanwhile could time the handshake out on a loaded machine).
        var linked = false
        for _ in 0..<5 where !linked {
            clock.advance(by: .seconds(31))
            linked =
                (try? await eventually("A links to B again", attempts: 1_000) {
                    await a.peers().map(\.peer) == [b.localPeerID]
                }) != nil
        }
        #expect(linked)
    }
}
