import Foundation
import Logging
import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// The flooding fallback (docs/PROTOCOL.md §A.9) over real routers on loopback links:
/// a message to a node no route reaches is flooded, delivered exactly once, and its
/// receipt floods back; TTL bounds the flood; suppression saves retransmissions.
@Suite struct FloodTests {
    static let flood = FloodConfiguration(enabled: true, maxDelay: .milliseconds(30))

    @Test(.timeLimit(.minutes(3))) func noRouteMeansFloodDeliveredOnceWithReceipt() async throws {
        let graph = await RouterGraph.flood(count: 5, edges: RouterGraph.lineEdges(5), flood: Self.flood)
        defer { Task { await graph.stop() } }
        try await graph.waitForLinks()
        let destination = graph[4].localPeerID
        #expect(await graph[0].routes().contains { $0.destination == destination } == false)

        let id = try await graph[0].send(to: destination, payload: Array("across the flood".utf8))
        let record = try await graph[0].waitForStatus(of: id, until: .delivered, timeout: .seconds(60))
        #expect(record.status == .delivered)
        #expect(graph.received(at: 4).map(\.id) == [id])
        #expect(graph.received(at: 4).first?.payload == Array("across the flood".utf8))
        #expect(graph.received(at: 4).first?.emergency == false)
        let origin = await graph[0].stats()
        #expect(origin.flood.started == 1)
        #expect(origin.receiptsAccepted == 1)
        // The destination had no route back either: the receipt was flooded too.
        #expect(await graph[4].stats().flood.started == 1)
        // Every relay on the way took a copy.
        for relay in 1...3 { #expect(await graph[relay].stats().flood.accepted >= 1) }
        // Nothing shown twice, whatever copies are still on their way.
        try await graph.waitUntil("every relay copy is final") { await Self.settled(graph) }
        #expect(graph.received(at: 4).count == 1)
    }

    @Test(.timeLimit(.minutes(3))) func ttlBoundsTheFlood() async throws {
        var flood = Self.flood
        flood.ttl = 3
        let graph = await RouterGraph.flood(count: 5, edges: RouterGraph.lineEdges(5), flood: flood)
        defer { Task { await graph.stop() } }
        try await graph.waitForLinks()

        // TTL 3 crosses two relays (N1, N2): N3 is reached, N4 is not.
        let near = try await graph[0].send(to: graph[3].localPeerID, payload: [1])
        _ = try await graph[0].waitForStatus(of: near, until: .delivered, timeout: .seconds(60))
        let far = try await graph[0].send(to: graph[4].localPeerID, payload: [2])
        try await graph.waitUntil("N3 drops the flood whose TTL is used up") {
            await graph[3].stats().flood.ttlExhausted >= 1
        }
        try await graph.waitUntil("every relay copy is final") { await Self.settled(graph) }
        #expect(graph.received(at: 4).isEmpty)
        #expect(await graph[4].status(of: far) == nil)  // never reached it, not even as a relay
        // The origin keeps its copy: it goes out when a route appears.
        #expect(await graph[0].status(of: far)?.status == .queued)
    }

    @Test(.timeLimit(.minutes(3))) func suppressionReducesRetransmissions() async throws {
        let edges = RouterGraph.denseGrid(columns: 4, rows: 4)
        var results: [Int: Int] = [:]
        for suppressAfter in [0, 2] {
            var flood = FloodConfiguration(enabled: true, maxDelay: .milliseconds(400), suppressAfter: suppressAfter)
            flood.ttl = 7
            let graph = await RouterGraph.flood(count: 16, edges: edges, flood: flood, seed: 42)
            try await graph.waitForLinks()
            let id = try await graph[0].send(to: graph[15].localPeerID, payload: Array("dense".utf8))
            _ = try await graph[0].waitForStatus(of: id, until: .delivered, timeout: .seconds(60))
            try await graph.waitUntil("every relay copy is final") { await Self.settled(graph) }
            #expect(graph.received(at: 15).map(\.id) == [id])
            results[suppressAfter] = await graph.total { $0.flood.transmissions }
            if suppressAfter > 0 { #expect(await graph.total { $0.flood.suppressed } > 0) }
            await graph.stop()
        }
        let without = try #require(results[0])
        let with = try #require(results[2])
        print(
            "flood transmissions on a 16-node dense grid (message + receipt): \(without) without suppression, \(with) with suppress_after 2 (\(Double(with) / Double(without)) x)"
        )
        #expect(with < without)
    }

    /// Every flood copy a relay took is final: re-broadcast, suppressed, or covered.
    static func settled(_ graph: RouterGraph) async -> Bool {
        for router in graph.routers {
            let stats = await router.stats()
            if stats.flood.accepted > stats.flood.suppressed + stats.flood.covered + stats.messagesRelayed {
                return false
            }
        }
        return true
    }
}

/// The `flood:` config keys: defaults, decoding, range checks naming the key.
@Suite struct FloodConfigurationTests {
    @Test func decodesEveryKeyAndRejectsBadValues() throws {
        let json = #"""
            {"enabled": true, "ttl": 5, "max_delay_ms": 50, "suppress_after": 2, "after_failed_attempts": 3,
             "emergency_per_hour": 4, "emergency_per_neighbour_per_hour": 12}
            """#
        let config = try JSONDecoder().decode(FloodConfiguration.self, from: Data(json.utf8))
        #expect(
            config
                == FloodConfiguration(
                    enabled: true,
                    ttl: 5,
                    maxDelay: .milliseconds(50),
                    suppressAfter: 2,
                    afterFailedAttempts: 3,
                    emergencyPerHour: 4,
                    emergencyPerNeighbourPerHour: 12
                )
        )
        #expect(try JSONDecoder().decode(FloodConfiguration.self, from: Data(JSONEncoder().encode(config))) == config)
        #expect(try JSONDecoder().decode(FloodConfiguration.self, from: Data("{}".utf8)) == FloodConfiguration())
        for (bad, key) in [
            (#"{"ttl": 0}"#, "ttl"), (#"{"emergency_per_hour": 0}"#, "emergency_per_hour"),
            (#"{"suppress": 1}"#, "suppress"),
        ] {
            #expect {
                try JSONDecoder().decode(FloodConfiguration.self, from: Data(bad.utf8))
            } throws: { error in
                "\(error)".contains(key)
            }
        }
    }
}
