import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// The relay's budgets (`relay.max_per_hour`, `relay.neighbour_share`,
/// `relay.battery_floor_percent`) driven from two raw neighbours X and Y on a manual
/// clock: over budget a message is refused (the neighbour keeps it), counted by reason;
/// the budget refills with time; receipts travelling back never count.
@Suite struct RelayBudgetTests {
    typealias RawPeer = ReceiverRulesTests.RawPeer

    struct FixedBattery: BatteryGauge {
        let percent: Int?
        func dischargingPercent() -> Int? { percent }
    }

    /// A router "R" with `limits` on `clock`, running until the returned task is cancelled.
    static func relay(
        limits: RelayLimits,
        clock: ManualClock,
        battery: Int?,
        network: LoopbackNetwork
    ) async throws -> (Router, Task<Void, any Error>) {
        let r = PeerID.random()
        var logger = Logger(label: "r")
        logger.logLevel = .critical
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: r),
            configuration: RouterConfiguration(
                escalation: EscalationConfiguration(ackTimeoutMin: .seconds(5), ackTimeoutMax: .seconds(10)),
                keepaliveInterval: .seconds(86_400),
                relayLimits: limits
            ),
            sealer: StandInSealer(peer: r),
            receipts: TestReceiptSigner(peer: r),
            clock: clock,
            battery: FixedBattery(percent: battery),
            logger: logger
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let run = Task { try await router.run() }
        try await eventually("the transport runs") { await router.transportStatus().first?.state == .running }
        return (router, run)
    }

    /// Sends `count` sealed messages from `peer` (origin o, for z), with hop sequence
    /// numbers from `first`, and waits until the router decided on each.
    static func offer(
        _ count: Int,
        from peer: inout RawPeer,
        first: UInt32,
        origin: PeerID,
        to z: PeerID,
        receipt: Bool = false,
        router: Router
    ) async throws -> [MessageID] {
        let before = await router.stats()
        let decided = before.relayAccepted + before.relayRefused.values.reduce(0, +)
        var ids: [MessageID] = []
        for index in 0..<count {
            let id = MessageID.random()
            ids.append(id)
            var frame = RelayRulesTests.data(first + UInt32(index), id, origin: origin, destination: z)
            if receipt, case .data(var data) = frame {
                data.flags |= 0x0002
                frame = .data(data)
            }
            try await peer.send(frame)
        }
        for _ in 0..<2000 {
            let stats = await router.stats()
            if stats.relayAccepted + stats.relayRefused.values.reduce(0, +) >= decided + count { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        return ids
    }

    @Test(.timeLimit(.minutes(3))) func hourlyBudgetAndFairShare() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        // 8 an hour for the node, 4 an hour for any one neighbour.
        let (router, run) = try await Self.relay(
            limits: RelayLimits(maxPerHour: 8, neighbourShare: 0.5, batteryFloorPercent: 20),
            clock: clock,
            battery: nil,
            network: network
        )
        defer { run.cancel() }
        let (x, y, o, z) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await RelayRulesTests.rawPeer(x, address: "X", network: network)
        let (rawY, runningY) = try await RelayRulesTests.rawPeer(y, address: "Y", network: network)
        var (peerX, peerY) = (rawX, rawY)
        defer {
            Task {
                await runningX.stop()
                await runningY.stop()
            }
        }

        // X floods 10: its share (4) is taken into custody, the other 6 are refused.
        // (The link's deliveries overlap, so which 4 is not fixed.)
        let fromX = try await Self.offer(10, from: &peerX, first: 1, origin: o, to: z, router: router)
        var stats = await router.stats()
        #expect(stats.relayAccepted == 4)
        #expect(stats.relayRefused == ["neighbourShare": 6])
        var held: [MessageStatus?] = []
        for id in fromX { held.append(await router.status(of: id)?.status) }
        #expect(held.count { $0 == .queued } == 4)
        #expect(held.count { $0 == nil } == 6)  // refused: X still holds them
        // Y's honest traffic still flows: its own share of 4 fits in what is left (4).
        _ = try await Self.offer(4, from: &peerY, first: 1, origin: o, to: z, router: router)
        stats = await router.stats()
        #expect(stats.relayAccepted == 8)
        // The node's hour is spent: Y's next one is refused for the budget; a receipt
        // travelling back is not.
        _ = try await Self.offer(1, from: &peerY, first: 5, origin: o, to: z, router: router)
        let receipts = try await Self.offer(1, from: &peerY, first: 6, origin: o, to: z, receipt: true, router: router)
        stats = await router.stats()
        #expect(stats.relayRefused == ["neighbourShare": 6, "budget": 1])
        #expect(stats.relayAccepted == 9)
        #expect(await router.status(of: receipts[0]) != nil)

        // Half an hour later the budget has refilled by half (4), X's share by half (2).
        clock.advance(by: .seconds(1800))
        _ = try await Self.offer(3, from: &peerX, first: 11, origin: o, to: z, router: router)
        stats = await router.stats()
        #expect(stats.relayAccepted == 11)
        #expect(stats.relayRefused["neighbourShare"] == 7)

        // Changed at run time: no limit.
        router.setRelayLimits(RelayLimits(maxPerHour: 0))
        _ = try await Self.offer(5, from: &peerX, first: 14, origin: o, to: z, router: router)
        #expect(await router.stats().relayAccepted == 16)
    }

    @Test(.timeLimit(.minutes(3))) func batteryFloor() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        let (router, run) = try await Self.relay(
            limits: RelayLimits(maxPerHour: 0, batteryFloorPercent: 20),
            clock: clock,
            battery: 15,
            network: network
        )
        defer { run.cancel() }
        let (x, o, z) = (PeerID.random(), PeerID.random(), PeerID.random())
        let (rawX, runningX) = try await RelayRulesTests.rawPeer(x, address: "X", network: network)
        var peerX = rawX
        defer { Task { await runningX.stop() } }
        _ = try await Self.offer(3, from: &peerX, first: 1, origin: o, to: z, router: router)
        var stats = await router.stats()
        #expect(stats.relayRefused == ["batteryLow": 3] && stats.relayAccepted == 0)
        // A floor of 0 means never.
        router.setRelayLimits(RelayLimits(maxPerHour: 0, batteryFloorPercent: 0))
        _ = try await Self.offer(2, from: &peerX, first: 4, origin: o, to: z, router: router)
        stats = await router.stats()
        #expect(stats.relayAccepted == 2)
    }
}
