import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing

/// A power profile's ``TransportPacing/routeSummaryInterval`` lengthens the route
/// summaries' base interval: after the one already due, the next waits four paced
/// intervals instead of four configured ones.
@Suite struct SummaryPacingTests {
    @Test(.timeLimit(.minutes(3))) func aPacedSummaryIntervalSpacesTheSummariesOut() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWithXAndZ(clock: clock)
        defer { Task { await setup.stop() } }
        let (router, x) = (setup.router, setup.x)
        try await x.sync(1)
        #expect(x.seen.summaries.withLock { $0.count } == 1, "the link-up summary")

        await router.setPacing(TransportPacing(routeSummaryInterval: .seconds(600)))
        #expect(await router.pacing().routeSummaryInterval == .seconds(600))
        var nonce: UInt64 = 1
        for _ in 1...100 {  // 1000 s in 10 s steps
            clock.advance(by: .seconds(10))
            nonce += 1
            try await x.sync(nonce)
        }
        // The summary scheduled at link-up (2 × 60 s ± 25 %) comes; the next is 4 × 600 s
        // ± 25 % later (unpaced: 4 × 60 s, and more after it).
        try await waitUntil("the summary scheduled at link-up") { x.seen.summaries.withLock { $0.count } >= 2 }
        #expect(x.seen.summaries.withLock { $0.count } == 2)
    }
}
