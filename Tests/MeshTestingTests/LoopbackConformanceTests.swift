import Logging
import MeshCore
import MeshTesting
import Testing

@Suite struct LoopbackConformanceTests {
    @Test func loopbackPassesTheConformanceSuite() async throws {
        try await TransportConformance.run(.loopback())
    }

    @Test func loopbackWithTinyMTUPassesTheConformanceSuite() async throws {
        try await TransportConformance.run(.loopback(configuration: .init(mtu: 23)))
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
        try await a.start(context: TransportContext(localPeerID: .random(), logger: .init(label: "t")))
        try await b.start(context: TransportContext(localPeerID: .random(), logger: .init(label: "t")))
        let link = try await a.dial(b.hint)
        network.partition("a", "b")
        await #expect(throws: MeshError.self) { try await link.send([1]) }
        await #expect(throws: MeshError.self) { _ = try await a.dial(b.hint) }
        network.heal("a", "b")
        let again = try await a.dial(b.hint)
        try await again.send([1])
        await a.stop()
        await b.stop()
    }
}
