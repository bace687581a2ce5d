import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

@Suite struct LoopbackConformanceTests {
    @Test func loopbackPassesTheConformanceSuite() async throws {
        try await TransportConformance.run(Self.underLoad(.loopback()))
    }

    @Test func loopbackWithTinyMTUPassesTheConformanceSuite() async throws {
        try await TransportConformance.run(Self.underLoad(.loopback(configuration: .init(mtu: 23))))
    }

    /// `harness` with a hang guard of two minutes: a check takes well under a second
    /// alone, but `swift test` runs every suite at once on two cores.
    static func underLoad(_ harness: TransportConformance.Harness) -> TransportConformance.Harness {
        var harness = harness
        harness.checkTimeout = .seconds(120)
        return harness
    }

    /// The suite must be able to fail: a transport that ignores back-pressure and
    /// the MTU is caught.
    @Test func suiteCatchesABrokenTransport() async throws {
        let harness = TransportConformance.Harness.loopback(configuration: .init(mtu: 64, bufferFrames: 1_000_000))
        await #expect(throws: ConformanceFailure.self) {
            try await TransportConformance.run(harness, only: ["back-pressure"])
        }
    }

    @Test func partitionFailsLinksAndDials() async throws {
        let network = LoopbackNetwork()
        let a = LoopbackTransport(address: "a", network: network)
        let b = LoopbackTransport(address: "b", network: network)
        let runningA = try await RunningTransport.start(a)
        let runningB = try await RunningTransport.start(b)
        let link = try await a.dial(b.hint)
        network.partition("a", "b")
        await #expect(throws: MeshError.self) { try await link.send([1]) }
        await #expect(throws: MeshError.self) { _ = try await a.dial(b.hint) }
        network.heal("a", "b")
        let again = try await a.dial(b.hint)
        try await again.send([1])
        await runningA.stop()
        await runningB.stop()
    }

    @Test func listeningReportsTheAddressAndCancellationLeavesTheNetwork() async throws {
        let network = LoopbackNetwork()
        let a = LoopbackTransport(address: "a", network: network)
        let b = LoopbackTransport(address: "b", network: network)
        let runningA = try await RunningTransport.start(a)
        #expect(runningA.addresses == ["a"])
        let runningB = try await RunningTransport.start(b)
        _ = try await b.dial(a.hint)
        await runningA.stop()
        // A left the network: B can no longer dial it, and B saw it go.
        await #expect(throws: MeshError.self) { _ = try await b.dial(a.hint) }
        #expect(a.openLinkCount == 0)
        var sawLost = false
        for await event in runningB.events {
            if case .peerLost(let hint) = event, hint.address == "a" {
                sawLost = true
                break
            }
        }
        #expect(sawLost)
        await runningB.stop()
    }
}
