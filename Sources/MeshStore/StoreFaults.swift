import MeshCore
import Synchronization

/// Where a test can stop the store as a crash there would: the step before is done
/// and durable, nothing after it runs (no clean-up either).
enum StoreCrashPoint: Sendable, Hashable {
    /// A received payload's file is written and synced; its inbox row is not committed.
    case inboxFileWritten
    /// Inbox rows are deleted (committed); their payload files are not removed yet.
    case inboxRowsDeleted
    /// A message's inbox write fails inside its transaction: it is rolled back alone,
    /// as a write the disk refused would be.
    case inboxWrite
}

/// The store's fault injection for tests (`@testable`): ``crash(at:)`` throws at the
/// chosen point, leaving the files and rows as a killed process would.
final class StoreFaults: Sendable {
    private let point = Mutex<StoreCrashPoint?>(nil)

    /// Makes the next pass through `point` fail as a crash (nil: never).
    func crash(_ point: StoreCrashPoint?) {
        self.point.withLock { $0 = point }
    }

    /// Throws when a test chose `point`: the caller stops there, with no clean-up.
    func crash(at point: StoreCrashPoint) throws(MeshError) {
        let chosen = self.point.withLock { current -> Bool in
            guard current == point else { return false }
            current = nil
            return true
        }
        if chosen { throw MeshError(.storeFailed, "store: simulated crash at \(point)") }
    }
}
