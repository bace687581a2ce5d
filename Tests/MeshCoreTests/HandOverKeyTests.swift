import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// Messages being handed to the sink or the relay queue are keyed by (origin, ID), as
/// duplicates are (issue 41, finding 2): while X's message with ID I is held by R's
/// sink, Y's own messages with the same ID — one for R, one R relays — are other
/// messages, taken at once, not refused as copies of X's.
@Suite struct HandOverKeyTests {
    @Test(.timeLimit(.minutes(3))) func anotherOriginsMessageWithTheSameIDIsNotBusy() async throws {
        let network = LoopbackNetwork()
        let r = PeerID.random()
        let sink = ScriptedSink(holding: true)
        var logger = Logger(label: "r")
        logger.logLevel = .critical
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: RouterConfiguration(
                escalation: EscalationConfiguration(ackTimeoutMin: .seconds(5), ackTimeoutMax: .seconds(10)),
                keepaliveInterval: .seconds(600)
            ),
            sealer: StandInSealer(peer: r),
            sink: sink,
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        defer { run.cancel() }
        try await eventually("R's transport runs") { await router.transportStatus().first?.state == .running }
        let (x, y, z) = (PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await RelayRulesTests.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await RelayRulesTests.rawPeer(y, address: "Y", network: network)
        var (peerX, peerY) = (rawX, rawY)
        defer {
            Task {
                await runningX.stop()
                await runningY.stop()
            }
        }
        var offers = sink.offers.makeAsyncIterator()

        let id = MessageID.random()
        try await peerX.send(RelayRulesTests.data(1, id, origin: x, destination: r, sealed: false))
        let first = await offers.next()
        #expect(first?.id == id && first?.from == x)  // held by the sink: X's hand-over is open

        // Y's message with the same ID for Z: R takes custody and acknowledges it.
        try await peerY.send(RelayRulesTests.data(1, id, origin: y, destination: z))
        let relayAck = try #require(try await peerY.receiveAck())
        #expect(relayAck.cumulative == 1 || relayAck.selective.contains(1))
        #expect(await router.stats().relayAccepted == 1)
        #expect(await router.status(of: id)?.origin == y)

        // Y's own message with that ID for R reaches the sink while X's is still held.
        try await peerY.send(RelayRulesTests.data(2, id, origin: y, destination: r, sealed: false))
        let second = await offers.next()
        #expect(second?.id == id && second?.from == y)
        #expect(await router.stats().framesRefused == 0)

        sink.release()
        let acks = try #require(try await peerX.receiveAck())
        #expect(acks.cumulative == 1 || acks.selective.contains(1))
        await router.shutdown()
    }
}
