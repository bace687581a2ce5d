import Logging
import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Route summaries (docs/PROTOCOL.md §A.5, "Route summaries"): the two frames'
/// encodings and the pair hash; the Trickle-paced timers; and, seen from raw neighbours
/// of a router R, that a new link gets a summary instead of the whole table, that a
/// repair brings the next summary within one interval, that a matching summary is left
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
        #expect(
            [0, 4, 5, 8, 9, 200, 1000, 70_000].map { RouteSummaryFrame.bucketBits(for: $0) } == [
                0, 0, 1, 1, 2, 6, 8, 8,
            ]
        )
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
            bucketBits: 3,
            buckets: [0, 7],
            pairs: [.init(origin: low, sequence: 5), .init(origin: high, sequence: 6)]
        )
        let bytes = Frame.routeListing(listing).encoded()
        #expect(Array(bytes.prefix(8)) == [1, 0x0B, 0, 0, 3, 0b1000_0001, 0, 2])
        #expect(bytes.count == 8 + 2 * 40)
        #expect(try Frame.decode(bytes) == .routeListing(listing))
        let empty = RouteListingFrame(bucketBits: 8, buckets: Array(0..<256), pairs: [])
        #expect(try Frame.decode(Frame.routeListing(empty).encoded()) == .routeListing(empty))
        let outside = RouteListingFrame(bucketBits: 3, buckets: [0], pairs: [.init(origin: high, sequence: 6)])
        let tooMany = [1, 0x0B, 0, 0, 0, 0x80, 0x05, 0xDD] + [UInt8](repeating: 0, count: 40 * 1501)
        for bad in [
            Array(bytes.dropLast()), bytes + [0], Frame.routeListing(outside).encoded(),
            [1, 0x0B, 0, 0, 0, 0x40, 0, 0], tooMany,
        ] {
            #expect(throws: MeshError.self) { try Frame.decode(bad) }
        }

        // ROUTE HOPS: digest, count, one byte per pair.
        let hops = RouteHopsFrame(digest: 0x0102_0304_0506_0708, hops: [0, 3, 255])
        let hopBytes = Frame.routeHops(hops).encoded()
        #expect(hopBytes == [1, 0x0C, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 3, 0, 3, 255])
        #expect(try Frame.decode(hopBytes) == .routeHops(hops))
        let none = RouteHopsFrame(digest: 0, hops: [])
        #expect(try Frame.decode(Frame.routeHops(none).encoded()) == .routeHops(none))
        let overLimit =
            [1, 0x0C, 0, 0] + [UInt8](repeating: 0, count: 8) + [0xEA, 0x61] + [UInt8](repeating: 1, count: 60_001)
        for bad in [Array(hopBytes.dropLast()), hopBytes + [0], Array(hopBytes.prefix(13)), overLimit] {
            #expect(throws: MeshError.self) { try Frame.decode(bad) }
        }
    }

    /// The summary timers back off like Trickle's: each summary sent doubles the
    /// neighbour's interval up to 16 ×; a difference between the tables (or a change of
    /// this node's own) brings the next one within the shortest interval and starts the
    /// doubling again; a lost neighbour is forgotten.
    @Test func summariesSlowDownWhileTheTablesAgreeAndSpeedUpWhenTheyDiffer() {
        let start = ContinuousClock.now
        let (a, b) = (PeerID.random(), PeerID.random())
        var timers = SummaryTimers()
        let interval = { (doublings: Int) in Duration.seconds(60 * (1 << doublings)) }
        timers.linked(a, due: start + .seconds(60))
        timers.linked(b, due: start + .seconds(70))
        #expect(timers.takeDue(now: start + .seconds(59), interval: interval).isEmpty)
        #expect(timers.nextDue == start + .seconds(60))

        // Linked (and sent a summary) at 0: the next to A at 60, then 300, 780, 1740,
        // then every 960 s (16 × 60).
        var now = start + .seconds(60)
        var sentToA: [Int] = []
        while now < start + .seconds(4000) {
            let due = timers.takeDue(now: now, interval: interval)
            if due.contains(a) { sentToA.append(Int((now - start).components.seconds)) }
            now = timers.nextDue!
        }
        #expect(sentToA == [60, 300, 780, 1740, 2700, 3660])
        #expect(timers.doublings(of: a) == SummaryTimers.maxDoublings)

        // Right after its summary at 3660 (next one due at 4620), A's table differs: its
        // next summary within the shortest interval, then 120 s on.
        now = start + .seconds(3661)
        timers.differ(a, due: now + .seconds(60))
        #expect(timers.doublings(of: a) == 0)
        let reset = now + .seconds(60)
        #expect(timers.takeDue(now: reset - .seconds(1), interval: interval).allSatisfy { $0 != a })
        #expect(timers.takeDue(now: reset, interval: interval).contains(a))
        #expect(timers.doublings(of: a) == 1)
        // A difference never postpones a summary due sooner.
        timers.differ(b, due: now + .seconds(100_000))
        #expect(timers.nextDue! <= reset + .seconds(960))

        // A change of this node's own table brings every neighbour back to the shortest.
        timers.differAll(due: now + .seconds(60))
        #expect(timers.doublings(of: a) == 0 && timers.doublings(of: b) == 0)
        #expect(timers.nextDue! <= now + .seconds(60))

        timers.lost(a)
        #expect(timers.doublings(of: a) == nil)
        timers.differ(a, due: now)
        #expect(timers.doublings(of: a) == nil)
    }

    /// Z announces O to R. A neighbour W linking later gets R's own announcement and a
    /// summary of what R holds, but not R's route to O; W's listing without O gets it.
    /// The next summary comes two summary intervals later. X's summary equal to R's is
    /// left unanswered; one without O gets a listing of O's bucket, whose pairs are R's.
    @Test(.timeLimit(.minutes(3))) func aNewLinkGetsASummaryAndAListingGetsWhatItLacks() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWithXAndZ(clock: clock)
        defer { Task { await setup.stop() } }
        let (router, r, x, z) = (setup.router, setup.r, setup.x, setup.z)
        let o = PeerID.random()
        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: TestReceiptSigner(peer: o)))
        try await waitUntil("R has a route to O") {
            await router.routes().contains { $0.destination == o }
        }
        try await x.sync(10)
        let latest = try #require(x.seen.announces.withLock { $0.last { $0.origin == r } })

        let w = try await Neighbour(address: "W", network: setup.network)
        defer { Task { await w.stop() } }
        try await waitUntil("R is linked to W") { await router.peers().count == 3 }
        try await w.sync(10)
        let rPairs: [(origin: PeerID, sequence: UInt64)] = [(r, latest.sequence), (o, 10)]
        #expect(w.seen.summaries.withLock { $0 } == [RouteSummaryFrame(bucketBits: 0, pairs: rPairs)])
        #expect(w.seen.announces.withLock { $0.map(\.origin) } == [r])

        try await w.send(
            .routeListing(
                RouteListingFrame(bucketBits: 0, buckets: [0], pairs: [.init(origin: r, sequence: latest.sequence)])
            )
        )
        try await w.sync(20)
        #expect(
            w.seen.announces.withLock { $0.filter { $0.origin == o }.map { [$0.sequence, UInt64($0.hops)] } } == [
                [10, 3]
            ]
        )
        #expect(await router.stats().routeSummaries["repaired"] == 1)

        // The repair showed the tables differed: W's next summary comes within one
        // interval (60 s ± 25 %), not two, and only one (the one after is ≥ 90 s on).
        // R's own refresh (600 s ± 25 %) is not due yet: the pairs are the same.
        #expect(w.seen.summaries.withLock { $0.count } == 1)
        clock.advance(by: .seconds(76))
        try await waitUntil("W got a second summary") {
            w.seen.summaries.withLock { $0.count } == 2
        }
        try await w.sync(30)
        #expect(w.seen.summaries.withLock { $0.count } == 2)
        #expect(w.seen.summaries.withLock { $0.last } == RouteSummaryFrame(bucketBits: 0, pairs: rPairs))
        let now = rPairs

        try await x.send(.routeSummary(RouteSummaryFrame(bucketBits: 0, pairs: now)))
        try await x.sync(31)
        #expect(x.seen.listings.withLock { $0 }.isEmpty)
        #expect(await router.stats().routeSummaries["matched"] == 1)

        // Two buckets: O's differs (X lacks it); the other matches.
        let bucketOfO = RouteSummaryFrame.bucket(of: o, bits: 1)
        let summary = RouteSummaryFrame(bucketBits: 1, pairs: [(r, latest.sequence)])
        let expected = RouteSummaryFrame(bucketBits: 1, pairs: now)
        try await x.send(.routeSummary(summary))
        try await x.sync(40)
        let listing = try #require(x.seen.listings.withLock { $0.first })
        let differing = (0..<2).filter { summary.hashes[$0] != expected.hashes[$0] }
        #expect(differing.contains(bucketOfO))
        #expect(listing.bucketBits == 1 && listing.buckets == differing)
        let listed = Set(listing.pairs.map { "\($0.origin)/\($0.sequence)" })
        let inDiffering = now.filter { differing.contains(RouteSummaryFrame.bucket(of: $0.origin, bits: 1)) }
        #expect(listed == Set(inDiffering.map { "\($0.origin)/\($0.sequence)" }))
        #expect(await router.stats().routeSummaries["listed"] == 1)
    }

    /// Z refreshes O every 100 s (a newer sequence, the same 2 hops), as every origin
    /// does at its refresh interval: R's summaries to X still back off (after the
    /// link-up one: 2, 4, 8 intervals later), as where nothing changes: with many
    /// origins a refresh arrives every few seconds, and counting each as news would keep
    /// summaries at the shortest interval. O's route moving (Z now 1 hop from it) still brings
    /// the next summary within one interval.
    @Test(.timeLimit(.minutes(3))) func refreshesDoNotHoldSummariesAtTheShortestInterval() async throws {
        let clock = ManualClock()
        let setup = try await RouteRequestTests.routerWithXAndZ(clock: clock)
        defer { Task { await setup.stop() } }
        let (router, x, z) = (setup.router, setup.x, setup.z)
        let o = PeerID.random()
        let signer = TestReceiptSigner(peer: o)
        try await z.send(AnnounceTests.announce(o, 10, hops: 2, signer: signer))
        try await waitUntil("R has a route to O") {
            await router.routes().contains { $0.destination == o }
        }
        try await x.sync(1)
        #expect(x.seen.summaries.withLock { $0.count } == 1, "the link-up summary")

        var sequence: UInt64 = 10
        var nonce: UInt64 = 1
        for step in 1...100 {  // 1000 s in 10 s steps, a refresh every 100 s
            if step % 10 == 0 {
                sequence += 1
                try await z.send(AnnounceTests.announce(o, sequence, hops: 2, signer: signer))
                try await waitUntil("R took the refresh") {
                    await router.routes().first { $0.destination == o }?.sequence == sequence
                }
            }
            clock.advance(by: .seconds(10))
            nonce += 1
            try await x.sync(nonce)
        }
        // O's first route was new data: a summary one interval (± 25 %) after it, then
        // 2, 4 and 8 intervals later: at most four after the link-up one in 1000 s
        // (with a reset at every refresh: one within 75 s of each, ten or more).
        #expect(await router.stats().announcesAccepted >= 10)

        // The route moves closer: new data, so the next summary comes within 75 s.
        let moved = sequence + 1
        try await z.send(AnnounceTests.announce(o, moved, hops: 1, signer: signer))
        try await waitUntil("R took the shorter route") {
            await router.routes().first { $0.destination == o }?.hops == 1
        }
        for _ in 1...8 {
            clock.advance(by: .seconds(10))
            nonce += 1
            try await x.sync(nonce)
        }
        // The clock stands still now: only a summary already due by 80 s can come. A
        // timer's task may send a summary after the sync that followed its time returned
        // (a loaded machine), so each is told apart by the table it hashes: R's own
        // entry (none, or a sequence R announced to X) and O at `moved` or earlier.
        let own = setup.r
        func listsMoved(_ summary: RouteSummaryFrame) -> Bool {
            let ownSequences = x.seen.announces.withLock { $0.filter { $0.origin == own }.map(\.sequence) }
            let rest = summary.hashes[0] ^ RouteSummaryFrame.entryHash(origin: o, sequence: moved)
            return rest == 0 || ownSequences.contains { RouteSummaryFrame.entryHash(origin: own, sequence: $0) == rest }
        }
        try await waitUntil("the summary due within 75 s of the new data") {
            x.seen.summaries.withLock { $0 }.contains(where: listsMoved)
        }
        let summaries = x.seen.summaries.withLock { $0 }
        let before = summaries.filter { !listsMoved($0) }.count
        #expect(before >= 4 && before <= 5, "\(before) summaries in 1000 s")
        #expect(summaries.filter(listsMoved).count == 1)
    }
}
