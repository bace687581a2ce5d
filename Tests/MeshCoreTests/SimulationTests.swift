import MeshCore
import MeshTesting
import Testing

/// The mesh simulator behind `MeshBench sim` (`MeshTesting/Simulation`), small enough
/// for CI: routers on a random geometric graph over lossy loopback links, on the
/// virtual clock, with a partition that heals and routers restarted with their queues.
@Suite struct SimulationTests {
    /// 16 nodes, 10 % packet loss, a partition and churn: every message is delivered
    /// (its signed receipt came back), each reached its destination exactly once, and
    /// the routes learned before any traffic reach every node.
    @Test(.timeLimit(.minutes(2))) func smallMeshDeliversEverythingExactlyOnce() async throws {
        let configuration = SimulationConfiguration(
            nodes: 16, seed: 7, loss: 0.1, messages: 40, targetDegree: 5, partitionShare: 0.25, partitionDuration: .seconds(30),
            churnShare: 0.1, churnDowntime: .seconds(20))
        let simulation = try MeshSimulation(configuration: configuration)
        let report = await simulation.run()
        #expect(report.nodes == 16)
        #expect(report.partitioned > 0 && report.churned > 0)
        #expect(report.routesKnown == report.routesPossible)
        #expect(report.sent == 40)
        #expect(report.delivered == report.sent, "undelivered: \(report.undelivered)")
        #expect(report.arrived == report.sent)
        #expect(report.duplicates == 0)
        #expect(report.duplicatesAfterRestart == 0)
        #expect(report.wire.dropped > 0)  // the loss really happened
        #expect(report.steadyMessagePackets >= report.steadyOptimalHops)
        #expect(report.wire.bytes(.announce) > 0)
    }

    /// The graph is connected, with about the mean degree asked for, and hop counts are
    /// breadth-first distances.
    @Test func randomGeometricGraphIsConnected() {
        var random = SystemRandomNumberGenerator()
        let graph = SimulationGraph(count: 300, targetDegree: 7, random: &random)
        let hops = graph.hops(from: 0)
        #expect(!hops.contains(-1))
        #expect((5.5...9).contains(graph.meanDegree))
        for (a, b) in graph.edges { #expect(abs(hops[a] - hops[b]) <= 1) }
    }
}
