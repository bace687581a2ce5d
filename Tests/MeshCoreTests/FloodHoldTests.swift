import Testing

@testable import MeshCore

/// Route requests forwarded and flooded (docs/PROTOCOL.md §A.5, "Route requests", rule
/// 4): one per target and sequence every 2 s, and a flood at most every 16 s; a newer
/// sequence goes at once.
@Suite struct FloodHoldTests {
    @Test func aFloodedRequestIsNotFloodedAgainFor16Seconds() {
        var requests = RouteRequests()
        let (t, u) = (PeerID.random(), PeerID.random())
        let start = ContinuousClock.Instant.now
        func may(_ target: PeerID, _ sequence: UInt64, flooding: Bool = false, at seconds: Int) -> Bool {
            requests.mayForward(target, sequence: sequence, flooding: flooding, now: start + .seconds(seconds))
        }

        #expect(may(t, 5, flooding: true, at: 0))
        #expect(!may(t, 5, at: 1), "within 2 s: a repeat")
        #expect(!may(t, 4, flooding: true, at: 3), "an older sequence is held as long")
        #expect(!may(t, 5, flooding: true, at: 6))
        // Toward a next hop (a route appeared), 2 s after the last: forwarded; the
        // flood hold stays.
        #expect(may(t, 5, at: 9))
        #expect(!may(t, 5, flooding: true, at: 12))
        #expect(may(t, 5, flooding: true, at: 18), "16 s after the flood at 0")
        // A newer sequence, or another target, floods at once.
        #expect(may(t, 6, flooding: true, at: 19))
        #expect(may(u, 5, flooding: true, at: 19))
    }
}
