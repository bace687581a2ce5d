import Logging
import MeshCore
import MeshTesting
import TestSupport
import Testing
import TransportLoopback

/// The emergency class (docs/PROTOCOL.md §A.10): ahead of every queue, flooded, marked
/// in the inbox, and held to its rate limits at the sender and at every relay.
@Suite struct EmergencyTests {
    @Test(.timeLimit(.minutes(3))) func emergencyOvertakesAFullQueue() async throws {
        // Flooding off: only the emergency class floods.
        let graph = await RouterGraph.flood(count: 2, edges: [], flood: FloodConfiguration())
        defer { Task { await graph.stop() } }
        let b = graph[1].localPeerID
        var normal: [MessageID] = []
        for index in 0..<300 { normal.append(try await graph[0].send(to: b, payload: Array("normal \(index)".utf8))) }
        let urgent = try await graph[0].send(to: b, payload: Array("help".utf8), options: SendOptions(emergency: true))
        #expect(await graph[0].status(of: urgent)?.isEmergency == true)
        // The link comes up with 300 ordinary messages waiting ahead of it.
        await graph[1].connect(to: PeerHint(transport: "lo", address: RouterGraph.address(0)))
        try await graph.waitUntil("B got all 301") { graph.received(at: 1).count == 301 }
        let inbox = graph.received(at: 1)
        let position = try #require(inbox.firstIndex { $0.id == urgent })
        // A drain sends 64 messages at a time: the emergency is in the first window.
        #expect(position < 64, "the emergency arrived as message \(position + 1) of 301")
        #expect(inbox[position].emergency && inbox[position].payload == Array("help".utf8))
        #expect(inbox.filter(\.emergency).count == 1)
        #expect(Set(inbox.map(\.id)) == Set(normal + [urgent]))
        #expect(await graph[0].stats().flood.emergencySent == 1)
    }

    @Test func ownEmergenciesAreRateLimitedWithAClearError() async throws {
        let clock = ManualClock()
        var logger = Logger(label: "e")
        logger.logLevel = .warning
        let id = PeerID.random()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: id),
            configuration: RouterConfiguration(flood: FloodConfiguration(emergencyPerHour: 3)),
            sealer: StandInSealer(peer: id),
            clock: clock,
            logger: logger
        )
        let peer = PeerID.random()
        for _ in 0..<3 { _ = try await router.send(to: peer, payload: [1], options: SendOptions(emergency: true)) }
        // The fourth within the hour is refused, with a reason, and nothing is queued.
        let refusedID = MessageID.random()
        let error = await #expect(throws: MeshError.self) {
            try await router.send(to: peer, payload: [2], options: SendOptions(id: refusedID, emergency: true))
        }
        #expect(error?.code == .rateLimited)
        #expect(error?.message.contains("flood.emergency_per_hour") == true)
        #expect(await router.status(of: refusedID) == nil)
        #expect(await router.stats().flood.emergencyRateLimited == ["ownLimit": 1])
        // Ordinary messages still go.
        _ = try await router.send(to: peer, payload: [3])
        // The bucket refills continuously: 3 an hour is one every 20 minutes.
        clock.advance(by: .seconds(20 * 60))
        _ = try await router.send(to: peer, payload: [4], options: SendOptions(emergency: true))
        await #expect(throws: MeshError.self) {
            try await router.send(to: peer, payload: [5], options: SendOptions(emergency: true))
        }
    }

    @Test(.timeLimit(.minutes(3))) func aFlooderOfEmergenciesIsHeldToItsLimitWhileHonestTrafficFlows() async throws {
        let network = LoopbackNetwork()
        let r = PeerID.random()
        var logger = Logger(label: "r")
        logger.logLevel = .critical
        let flood = FloodConfiguration(
            enabled: true,
            maxDelay: .zero,
            emergencyPerHour: 100,
            emergencyPerNeighbourPerHour: 5
        )
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: RouterConfiguration(
                escalation: EscalationConfiguration(ackTimeoutMin: .seconds(5), ackTimeoutMax: .seconds(10)),
                keepaliveInterval: .seconds(600),
                flood: flood
            ),
            sealer: StandInSealer(peer: r),
            receipts: TestReceiptSigner(peer: r),
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        defer { run.cancel() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }
        let (x, y, z) = (PeerID.random(), PeerID.random(), PeerID.random())
        let (flooder, runningX) = try await RelayRulesTests.rawPeer(x, address: "X", network: network)
        let (honest, runningY) = try await RelayRulesTests.rawPeer(y, address: "Y", network: network)
        defer {
            Task {
                await runningX.stop()
                await runningY.stop()
            }
        }
        // X sends 20 emergencies, each claiming another origin (origins are not
        // authenticated to a relay; X's link is).
        let emergency = DataFrame.sealedFlag | DataFrame.floodFlag | DataFrame.emergencyFlag
        for sequence in 1...20 {
            try await flooder.send(Self.frame(UInt32(sequence), origin: .random(), destination: z, flags: emergency))
        }
        try await waitUntil("R decided on all 20") {
            let stats = await router.stats()
            return stats.flood.accepted + (stats.flood.emergencyRateLimited["emergencyNeighbour"] ?? 0) == 20
        }
        var stats = await router.stats()
        #expect(stats.flood.accepted == 5)
        #expect(stats.flood.emergencyRateLimited == ["emergencyNeighbour": 15])
        #expect(stats.relayRefused["emergencyNeighbour"] == 15)
        // Honest traffic from Y flows: an ordinary flood and an ordinary relayed message.
        try await honest.send(
            Self.frame(1, origin: .random(), destination: z, flags: DataFrame.sealedFlag | DataFrame.floodFlag)
        )
        try await honest.send(Self.frame(2, origin: .random(), destination: z, flags: DataFrame.sealedFlag))
        try await waitUntil("R took Y's two messages") { await router.stats().relayAccepted == 7 }
        stats = await router.stats()
        #expect(stats.flood.accepted == 6)
    }

    @Test func relayLimitsPerOriginAndPerNeighbour() async throws {
        let clock = ManualClock()
        let id = PeerID.random()
        var logger = Logger(label: "e")
        logger.logLevel = .critical
        // Exercised through the public surface: a router's own sends count against its
        // own origin's bucket, exactly as a relay counts another origin's.
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: id),
            configuration: RouterConfiguration(flood: FloodConfiguration(emergencyPerHour: 1)),
            sealer: StandInSealer(peer: id),
            clock: clock,
            logger: logger
        )
        _ = try await router.send(to: .random(), payload: [1], options: SendOptions(emergency: true))
        await #expect(throws: MeshError.self) {
            try await router.send(to: .random(), payload: [1], options: SendOptions(emergency: true))
        }
        clock.advance(by: .seconds(61 * 60))
        _ = try await router.send(to: .random(), payload: [1], options: SendOptions(emergency: true))
    }

    static func frame(_ sequence: UInt32, origin: PeerID, destination: PeerID, flags: UInt16) -> Frame {
        let body: [UInt8] = [0xE0, 0x01, 0x02]
        return .data(
            DataFrame.whole(sequence: sequence, origin: origin, destination: destination, flags: flags, payload: body)
        )
    }

}
