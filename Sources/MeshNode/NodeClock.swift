import Foundation
import MeshCore

/// The node's clock: the system's monotonic clock for timers, and the wall clock for
/// what is signed with a date (topic publication times, docs/PROTOCOL.md §A.7).
struct NodeClock: MeshClock {
    private let system = SystemClock()

    var now: ContinuousClock.Instant { system.now }

    func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await system.sleep(until: deadline)
    }

    var wallClockMillis: UInt64? { UInt64(max(0, Date().timeIntervalSince1970 * 1000)) }
}
