import Foundation
import MeshCore
import Testing

@testable import MeshStore

@Suite("The persisted announcement state")
struct AnnounceStateLogTests {
    @Test("nothing before the first save; the latest save survives a reopen, the whole u64 range included")
    func survivesRestart() async throws {
        try await withTemporaryDirectory { directory throws in
            let path = directory + "/store.sqlite"
            let high = AnnounceState(unsolicited: UInt64.max - 7, latest: UInt64.max)
            try await withReopened(path) { store throws in
                #expect(await store.announceState.load() == nil)
                await store.announceState.save(AnnounceState(unsolicited: 10, latest: 12))
                #expect(await store.announceState.load() == AnnounceState(unsolicited: 10, latest: 12))
                await store.announceState.save(high)
            }
            try await withReopened(path) { store throws in
                #expect(await store.announceState.load() == high)
            }
        }
    }
}
