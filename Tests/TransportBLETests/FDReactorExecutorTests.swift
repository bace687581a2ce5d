#if canImport(CBlueZ)
import MeshCore
import Testing
@testable import TransportBLE

@Suite("FDReactor as a task executor", .timeLimit(.minutes(3)))
struct FDReactorExecutorTests {
    @Test("a link loop that prefers the reactor runs on the reactor thread, before and after every wait")
    func linkLoopOnReactorThread() async throws {
        let (a, b) = try makeLinkPair(mtu: 256)
        let reactor = FDReactor.shared
        let echo = Task(executorPreference: reactor) { () async throws -> [Bool] in
            var onReactor = [reactor.isCurrentThread]
            while let frame = try await b.receive() {
                onReactor.append(reactor.isCurrentThread)
                try await b.send(frame)
            }
            onReactor.append(reactor.isCurrentThread)
            return onReactor
        }
        for index in 0..<50 {
            try await a.send(pattern(index, size: 1 + index * 5))
            #expect(try await a.receive() == pattern(index, size: 1 + index * 5))
        }
        await a.close()
        let flags = try await echo.value
        #expect(flags.count == 52)
        #expect(flags.allSatisfy { $0 })
        await b.close()
    }

    @Test("a task without the preference does not run on the reactor thread")
    func otherTasksStayOff() async throws {
        let reactor = FDReactor.shared
        // Start the reactor thread (the first preferring job does).
        #expect(await Task(executorPreference: reactor) { reactor.isCurrentThread }.value)
        #expect(await Task.detached { reactor.isCurrentThread }.value == false)
        #expect(BLETransport.linkExecutor != nil)
    }

    @Test("jobs enqueued from other threads wake the idle reactor, many at once")
    func manyTasksFromOutside() async throws {
        let reactor = FDReactor.shared
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 {
                group.addTask(executorPreference: reactor) {
                    await Task.yield()
                    return reactor.isCurrentThread
                }
            }
            var all: [Bool] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 200)
        #expect(results.allSatisfy { $0 })
    }

    @Test("cancelling a task waiting on the reactor executor ends its receive")
    func cancelWhileWaiting() async throws {
        let (a, b) = try makeLinkPair()
        let reactor = FDReactor.shared
        let started = Counter()
        let waiting = Task(executorPreference: reactor) { () async -> Bool in
            started.increment()
            do {
                _ = try await b.receive()
                return false
            } catch is CancellationError {
                return reactor.isCurrentThread
            } catch {
                return false
            }
        }
        while started.value == 0 { await Task.yield() }
        waiting.cancel()
        #expect(await waiting.value)
        await a.close()
        await b.close()
    }
}
#endif
