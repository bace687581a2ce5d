import MeshCore
import MeshSimulator
import Testing

/// Hop counts are not signed (docs/PROTOCOL.md §A.5, "What a lying relay can do"): a
/// relay can claim any number of hops for a route it passes on. Two such relays, the
/// best-connected of a 50-node mesh under 10 % loss with a partition and churn, claim
/// every route 1 hop long, 3 hops longer than it is, or each in turn, while 1000
/// messages cross the mesh between the other nodes. Claiming longer, they only repel
/// traffic, and at least 999 arrive. Claiming shorter (always or in turn), they route
/// to each other and hold what they draw in a loop; the holder's flood through (§A.9)
/// takes most messages out, and at least 90 % arrive. The rest are a known issue:
/// copies whose TTL the loop spent, held with a hop's custody that no next hop takes.
@Suite struct LyingRelayTests {
    @Test(.timeLimit(.minutes(10)), arguments: SimulationConfiguration.HopLie.allCases)
    func twoRelaysLyingAboutHopCountsLeaveTheRestOfTheMeshDelivering(lie: SimulationConfiguration.HopLie) async throws {
        var configuration = SimulationConfiguration(
            nodes: 50,
            seed: 7,
            loss: 0.1,
            messages: 1000,
            targetDegree: 6,
            topicMessages: 0
        )
        configuration.router.flood.enabled = true
        configuration.liars = 2
        configuration.lie = lie
        let simulation = try MeshSimulation(configuration: configuration)
        let report = await simulation.run()
        #expect(simulation.liars.count == 2)
        #expect(report.lies > 0, "the liars rewrote announcements")
        #expect(report.sent == 1000)
        let delivered = {
            #expect(
                report.delivered * 1000 >= report.sent * 999,
                "\(report.delivered) of \(report.sent); undelivered: \(report.undelivered)"
            )
        }
        if lie == .longer {
            delivered()
        } else {
            #expect(
                report.delivered * 100 >= report.sent * 90,
                "\(report.delivered) of \(report.sent); undelivered: \(report.undelivered)"
            )
            withKnownIssue("a copy whose TTL a loop spent, held where no next hop takes it", isIntermittent: true) {
                delivered()
            }
        }
        #expect(report.duplicates == 0)
    }
}
