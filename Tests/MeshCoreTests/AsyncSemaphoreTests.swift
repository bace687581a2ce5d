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

    /// Taking several permits at once waits until that many are free, and keeps its
    /// place: a waiter behind it for one permit is not served first.
    @Test func aWaiterForSeveralPermitsWaitsForAllAndKeepsItsPlace() async throws {
        let semaphore = AsyncSemaphore(permits: 3)
        try await semaphore.acquire()
        try await semaphore.acquire()
        let served = Served()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await semaphore.acquire(3)
                served.names.withLock { $0.append("all") }
                semaphore.release(3)
            }
            try await eventually("all waits", attempts: 1000) { semaphore.waiting == 1 }
            group.addTask {
                try await semaphore.acquire()
                served.names.withLock { $0.append("one") }
                semaphore.release()
            }
            try await eventually("one waits behind it", attempts: 1000) { semaphore.waiting == 2 }
            semaphore.release()
            #expect(semaphore.waiting == 2, "two of three permits free: nobody is served")
            semaphore.release()
            try await group.waitForAll()
        }
        #expect(served.names.withLock { $0 } == ["all", "one"])
    }

    /// A waiter for more permits than are free that is cancelled lets the waiters
    /// behind it take the free ones.
    @Test(.timeLimit(.minutes(1))) func cancellingAWaiterForSeveralPermitsServesThoseBehindIt() async throws {
        let semaphore = AsyncSemaphore(permits: 2)
        try await semaphore.acquire()
        let all = Task { try await semaphore.acquire(2) }
        try await eventually("all waits", attempts: 1000) { semaphore.waiting == 1 }
        let one = Task { try await semaphore.acquire() }
        try await eventually("one waits behind it", attempts: 1000) { semaphore.waiting == 2 }
        all.cancel()
        await #expect(throws: CancellationError.self) { try await all.value }
        try await one.value
        #expect(semaphore.waiting == 0)
    }
}
