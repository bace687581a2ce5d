import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Route summaries (docs/PROTOCOL.md §A.5, "Route summaries"): the two frames'
/// encodings and the pair hash; and, seen from raw neighbours of a router R, that a new
/// link gets a summary instead of the whole table, that a matching summary is left
/// unanswered and a differing one answered with a listing of the differing buckets, and
/// that a listing lacking a route gets that route sent.
@Suite struct RouteSummaryTests {
    typealias Neighbour = AnnounceRelayingTests.Neighbour

    @Test func theFramesRoundTripAndMalformedOnesAreRejected() throws {
        // The pair hash, against values computed outside Swift from the spec's text.
        let zeroToThirtyOne = try PeerID(bytes: 0..<32)
        #expect(RouteSummaryFrame.entryHash(origin: zeroToThirtyOne, sequence: 1) == 0x65ec_dbf0_2e95_dc31)
        let allOnes = try PeerID(bytes: [UInt8](repeating: 0xFF, count: 32))
        #expect(RouteSummaryFrame.entryHash(origin: allOnes, sequence: 0x0102_0304_0506_0708) == 0xdbb1_3437_df0f_f195)
        #expect([0, 4, 5, 8, 9, 200, 1000, 70_000].map { RouteSummaryFrame.bucketBits(for: $0) } == [0, 0, 1, 1, 2, 6, 8, 8])
        #expect(RouteSummaryFrame.bucket(of: allOnes, bits: 0) == 0)
        #expect(RouteSummaryFrame.bucket(of: allOnes, bits: 3) == 7)
        #expect(RouteSummaryFrame.bucket(of: zeroToThirtyOne, bits: 8) == 0)

        for bits: UInt8 in [0, 3, 8] {
            let pairs = (0..<40).map { _ in (origin: PeerID.random(), sequence: UInt64.random(in: 0...UInt64.max)) }
            let summary = RouteSummaryFrame(bucketBits: bits, pairs: pairs)
            let bytes = Frame.routeSummary(summary).encoded()
            #expect(Array(bytes.prefix(5)) == [1, 0x0A, 0, 0, bits])
            #expect(bytes.count == 5 + 8 << Int(bits))
            #expect(try Frame.decode(bytes) == .routeSummary(summary))
            // XOR per bucket: the order of the pairs does not matter.
            #expect(RouteSummaryFrame(bucketBits: bits, pairs: pairs.reversed()) == summary)
            for bad in [Array(bytes.dropLast()), bytes + [0]] {
                #expect(throws: MeshError.self) { try Frame.decode(bad) }
            }
        }
        #expect(throws: MeshError.self) { try Frame.decode([1, 0x0A, 0, 0, 9] + [UInt8](repeating: 0, count: 8 << 9)) }

        let low = try PeerID(bytes: [0x10] + [UInt8](repeating: 1, count: 31))  // bucket 0 of 8
        let high = try PeerID(bytes: [0xE0] + [UInt8](repeating: 2, count: 31))  // bucket 7 of 8
        let listing = RouteListingFrame(
            bucketBits: 3, buckets: [0, 7], pairs: [.init(origin: low, sequence: 5), .init(origin: high, sequence: 6)])
        let bytes = Frame.routeListing(listing).encoded()
        #expect(Array(bytes.prefix(8)) == [1, 0x0B, 0, 0, 3, 0b1000_0001, 0, 2])
        #expect(bytes.count == 8 + 2 * 40)
        #expect(try Frame.decode(bytes) == .routeListing(listing))
        let empty = RouteListingFrame(bucketBits: 8, buckets: Array(0..<256), pairs: [])
        #expect(try Frame.decode(Frame.routeListing(empty).encoded()) == .routeListing(empty))
        let outside = RouteListingFrame(bucketBits: 3, buckets: [0], pairs: [.init(origin: high, sequence: 6)])
        let tooMany = [1, 0x0B, 0, 0, 0, 0x80, 0x05, 0xDD] + [UInt8](repeating: 0, count: 40 * 1501)
        for bad in [Array(bytes.dropLast()), bytes + [0], Frame.routeListing(outside).encoded(), [1, 0x0B, 0, 0, 0, 0x40, 0, 0], tooMany] {
            #expect(throws: MeshError.self) { try Frame.decode(bad) }
        }
    }

    /// Z announces O to R. A neighbour W linking later gets R's own announcement and a
    /// summary of what R holds, but not R's route to O; W's listing without O gets it.
    /// X's summary equal to R's is left unanswered; one without O gets a listing of
    /// O's bucket, whose pairs are R's.
    @Test(.timeLimit(.minutes(1))) func aNewLinkGetsASummaryAndAListingGetsWhatItLacks() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWithXAndZ(clock: clock)
        defer { Task { await setup.stop() } }
        let (router, r, x, z) = (setup.router, setup.r, setup.x, setup.z)
        let o = PeerID.random()
        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: TestReceiptSigner(peer: o)))
        try await AnnounceRelayingTests.waitUntil("R has a route to O") { await router.routes().contains { $0.destination == o } }
        try await x.sync(10)
        let own = try #require(x.seen.announces.withLock { $0.last { $0.origin == r } })

        let w = try await Neighbour(address: "W", network: setup.network)
        defer { Task { await w.stop() } }
        try await AnnounceRelayingTests.waitUntil("R is linked to W") { await router.peers().count == 3 }
        try await w.sync(10)
        let rPairs: [(origin: PeerID, sequence: UInt64)] = [(r, own.sequence), (o, 10)]
        #expect(w.seen.summaries.withLock { $0 } == [RouteSummaryFrame(bucketBits: 0, pairs: rPairs)])
        #expect(w.seen.announces.withLock { $0.map(\.origin) } == [r])

        try await w.send(.routeListing(RouteListingFrame(bucketBits: 0, buckets: [0], pairs: [.init(origin: r, sequence: own.sequence)])))
        try await w.sync(20)
        #expect(w.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } } == [[10, 3]])
        #expect(await router.stats().routeSummaries["repaired"] == 1)

        try await x.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: rPairs)))
        try await x.sync(30)
        #expect(x.seen.listings.withLock { $0 }.isEmpty)
        #expect(await router.stats().routeSummaries["matched"] == 1)

        // Two buckets: O's differs (X lacks it); the other matches.
        let bucketOfO = RouteSummaryFrame.bucket(of: o, bits: 1)
        let summary = RouteSummaryFrame(bucketBits: 1, pairs: [(r, own.sequence)])
        let expected = RouteSummaryFrame(bucketBits: 1, pairs: rPairs)
        try await x.send(.routeSummary(summary))
        try await x.sync(40)
        let listing = try #require(x.seen.listings.withLock { $0.first })
        let differing = (0..<2).filter { summary.hashes[$0] != expected.hashes[$0] }
        #expect(differing.contains(bucketOfO))
        #expect(listing.bucketBits == 1 && listing.buckets == differing)
        let listed = Set(listing.pairs.map { "\($0.origin)/\($0.sequence)" })
        let inDiffering = rPairs.filter { differing.contains(RouteSummaryFrame.bucket(of: $0.origin, bits: 1)) }
        #expect(listed == Set(inDiffering.map { "\($0.origin)/\($0.sequence)" }))
        #expect(await router.stats().routeSummaries["listed"] == 1)
    }
}
