import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

@testable import MeshCore

/// The topic heartbeat (mesh upkeep, IHAVE gossip) sleeps while the node has no
/// neighbour, ticks once one links, and follows a power profile's
/// ``TransportPacing/topicHeartbeatInterval``.
@Suite struct TopicHeartbeatPacingTests {
    @Test(.timeLimit(.minutes(3))) func theHeartbeatWaitsForALinkAndFollowsThePacing() async throws {
        let clock = ManualClock()
        let network = LoopbackNetwork()
        let (router, _, run) = try await RouteRequestTests.router(network: network, clock: clock)
        defer { run.cancel() }
        let gossip = router.gossip
        let heartbeats = { gossip.state.withLock { $0.heartbeats } }

        try await waitUntil("the heartbeat waits for a link") { gossip.linkWaker.isSleeping }
        clock.advance(by: .seconds(7200))
        #expect(heartbeats() == 0)

        let x = try await AnnounceRelayingTests.Neighbour(address: "X", network: network)
        defer { Task { await x.stop() } }
        try await waitUntil("a heartbeat once linked") {
            clock.advance(by: .seconds(1))
            return heartbeats() >= 1
        }

        // Paced to 10 s: the heartbeat already asleep ends, then the next comes 10 s on.
        await router.setPacing(TransportPacing(topicHeartbeatInterval: .seconds(10)))
        let before = heartbeats()
        try await waitUntil("the heartbeat already due") {
            clock.advance(by: .seconds(1))
            return heartbeats() > before
        }
        let paced = heartbeats()
        let start = clock.now
        try await waitUntil("the first paced heartbeat") {
            clock.advance(by: .seconds(1))
            return heartbeats() > paced
        }
        #expect(clock.now - start >= .seconds(8), "the next heartbeat came \(clock.now - start) later")
    }
}
