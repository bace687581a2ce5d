import Foundation
import MeshCore
import Testing

@testable import MeshStore

@Suite("The persisted route table")
struct RouteTableLogTests {
    @Test(
        "nothing before the first save; the latest save survives a reopen, aged by the time between, the whole u64 range included"
    )
    func survivesRestart() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let (o, p, n, m) = (PeerID.random(), PeerID.random(), PeerID.random(), PeerID.random())
            let first = [
                SavedRouteEntry(
                    origin: o,
                    highest: UInt64.max,
                    age: .seconds(5),
                    summarised: UInt64.max - 1,
                    feasibilityDistance: 2,
                    advertisements: [
                        .init(
                            neighbour: n,
                            hops: 2,
                            sequence: UInt64.max,
                            signature: [1, 2, 3],
                            transport: "tcp",
                            age: .seconds(5)
                        ),
                        .init(
                            neighbour: m,
                            hops: 4,
                            sequence: UInt64.max - 1,
                            signature: [4],
                            transport: "ble",
                            age: .seconds(90)
                        ),
                    ]
                ),
                SavedRouteEntry(
                    origin: p,
                    highest: 7,
                    age: .seconds(1),
                    summarised: nil,
                    feasibilityDistance: 255,
                    advertisements: [
                        .init(neighbour: n, hops: 1, sequence: 7, signature: [], transport: "lo", age: .seconds(1))
                    ]
                ),
            ]
            try await withReopened(path) { store throws in
                #expect(await store.routeTable.load().isEmpty)
                await store.routeTable.save(first)
                await store.routeTable.save(Array(first.prefix(1)))  // replaces, not adds
            }
            let saved = Date()
            try await withReopened(path) { store throws in
                let loaded = await store.routeTable.load()
                let down = Duration.milliseconds(Int64(Date().timeIntervalSince(saved) * 1000))
                #expect(loaded.count == 1)
                let entry = try #require(loaded.first)
                // Aged by the time the store was closed (at least 0, at most `down` + 1 s).
                let grown = entry.age - .seconds(5)
                #expect(grown >= .zero && grown <= down + .seconds(1))
                #expect(entry.aged(by: .zero) == first[0].aged(by: grown).withAdvertisementsSorted(like: entry))
            }
        }
    }
}

extension SavedRouteEntry {
    /// The same entry with its advertisements in the order of `other`'s (a store returns
    /// them in any order).
    fileprivate func withAdvertisementsSorted(like other: SavedRouteEntry) -> SavedRouteEntry {
        var entry = self
        let order = other.advertisements.map(\.neighbour)
        entry.advertisements.sort {
            (order.firstIndex(of: $0.neighbour) ?? 0) < (order.firstIndex(of: $1.neighbour) ?? 0)
        }
        return entry
    }
}
