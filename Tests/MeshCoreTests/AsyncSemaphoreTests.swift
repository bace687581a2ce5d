import MeshTesting
import Synchronization
import Testing

@testable import MeshCore

/// The semaphore behind a link's send window: first come, first served, except that a
/// waiter that asks to go ahead (an emergency frame) is served before the others.
@Suite struct AsyncSemaphoreTests {
    /// The waiters' names in the order they were served.
    final class Served: Sendable {
        let names = Mutex<[String]>([])
    }

    @Test func waitersThatAskToGoAheadAreServedFirstInTheirOrder() async throws {
        let semaphore = AsyncSemaphore(permits: 1)
        try await semaphore.acquire()
        let served = Served()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, name) in ["a", "b", "urgent 1", "c", "urgent 2"].enumerated() {
                group.addTask {
                    try await semaphore.acquire(ahead: name.hasPrefix("urgent"))
                    served.names.withLock { $0.append(name) }
                    semaphore.release()
                }
                try await eventually("\(name) waits", attempts: 1000) { semaphore.waiting == index + 1 }
            }
            semaphore.release()
            try await group.waitForAll()
        }
        #expect(served.names.withLock { $0 } == ["urgent 1", "urgent 2", "a", "b", "c"])
    }
}
