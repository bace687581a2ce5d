import MeshTesting
import Synchronization
import TestSupport
import Testing

@testable import MeshCore

/// Shortcuts (docs/PROTOCOL.md §A.5): a node that hears a neighbour announce the
/// sequence it routes by, farther from the origin than its own route one hop further
/// would make it, sends that neighbour its route. Seen from raw neighbours X and Y of a
/// router R, with a ManualClock that never moves.
@Suite struct ShortcutTests {
    typealias Neighbour = AnnounceRelayingTests.Neighbour

    /// R routes to O through X in 2 hops (sequence 10). Y announces O at 10 in 6 hops
    /// (its own route 5): R sends Y its route, 3 hops. Y announcing 4 (its route 3, as
    /// short as R's would make it), a newer sequence, or an older one, gets nothing.
    @Test(.timeLimit(.minutes(3)))
    func aNeighbourFartherThanItNeedsBeGetsThisNodesRoute() async throws {
        let star = try await RouteRequestTests.routerWith(["X", "Y"], clock: ManualClock())
        let (router, x, y) = (star.router, star.x, star.z)
        defer { Task { await star.stop() } }
        let o = PeerID.random()
        func toY() -> [[UInt64]] {
            y.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } }
        }
        let announce = { (sequence: UInt64, hops: UInt8) in
            SolicitedAnswerTests.announce(o, sequence, hops: hops, solicited: false)
        }
        try await x.send(.announce(announce(10, 2)))
        try await waitUntil("R has a route to O through X") {
            await router.routes().contains { $0.destination == o && $0.nextHop == x.peer && $0.hops == 2 }
        }
        try await y.sync(10)
        let before = toY()
        #expect(before == [[10, 3]], "R's route re-announced to Y")

        try await y.send(.announce(announce(10, 6)))
        try await y.sync(20)
        #expect(toY() == before + [[10, 3]])
        try await y.send(.announce(announce(10, 4)))
        try await y.send(.announce(announce(9, 8)))
        try await y.sync(30)
        #expect(toY() == before + [[10, 3]])
        #expect(await router.stats().shortcutsOffered == 1)
        // The route in use is still X's.
        #expect(await router.routes().contains { $0.destination == o && $0.nextHop == x.peer && $0.hops == 2 })
    }
}
