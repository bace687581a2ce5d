import Logging
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

@testable import MeshCore

/// The write-stall detector on its own: progress resets it, a wait without progress
/// degrades the link once and then stalls it.
@Suite struct WriteStallDetectorTests {
    let start = ContinuousClock.now

    @Test func idleAndFlowingWritesNeverStall() {
        var detector = WriteStallDetector(timeout: .seconds(10), degradeAfter: .seconds(4))
        #expect(detector.observe(started: 0, finished: 0, now: start) == .flowing)
        #expect(detector.observe(started: 5, finished: 5, now: start + .seconds(60)) == .flowing)
        // A write pending across many ticks, but others keep finishing: busy, not stalled.
        for step in 1...100 {
            let verdict = detector.observe(started: 10 + step, finished: 9 + step, now: start + .seconds(60 + step * 5))
            #expect(verdict == .waiting(.zero))
        }
    }

    @Test func aWriteWithNoProgressDegradesOnceThenStalls() {
        var detector = WriteStallDetector(timeout: .seconds(10), degradeAfter: .seconds(4))
        #expect(detector.observe(started: 3, finished: 2, now: start) == .waiting(.zero))
        #expect(detector.observe(started: 3, finished: 2, now: start + .seconds(3)) == .waiting(.seconds(3)))
        #expect(detector.observe(started: 3, finished: 2, now: start + .seconds(4)) == .degraded(.seconds(4)))
        #expect(detector.observe(started: 3, finished: 2, now: start + .seconds(5)) == .waiting(.seconds(5)))
        #expect(detector.observe(started: 3, finished: 2, now: start + .seconds(10)) == .stalled(.seconds(10)))
        // The write finished after all: the clock starts again.
        #expect(detector.observe(started: 4, finished: 3, now: start + .seconds(11)) == .waiting(.zero))
        #expect(detector.observe(started: 4, finished: 3, now: start + .seconds(16)) == .degraded(.seconds(5)))
        #expect(detector.observe(started: 4, finished: 4, now: start + .seconds(17)) == .flowing)
    }

    @Test func aWaitCountsFromTheWritesStartAndNamesTheNextDecision() {
        var detector = WriteStallDetector(timeout: .seconds(10), degradeAfter: .seconds(4))
        #expect(detector.nextDecision == nil)
        // First seen 3 s after the write began: the wait counts from its start.
        #expect(
            detector.observe(started: 3, finished: 2, pendingSince: start, now: start + .seconds(3))
                == .waiting(.seconds(3))
        )
        #expect(detector.nextDecision == start + .seconds(4))
        #expect(
            detector.observe(started: 3, finished: 2, pendingSince: start, now: start + .seconds(4))
                == .degraded(.seconds(4))
        )
        #expect(detector.nextDecision == start + .seconds(10))
        #expect(
            detector.observe(started: 3, finished: 2, pendingSince: start, now: start + .seconds(10))
                == .stalled(.seconds(10))
        )
        // Done: nothing left to decide.
        #expect(detector.observe(started: 3, finished: 3, pendingSince: start, now: start + .seconds(11)) == .flowing)
        #expect(detector.nextDecision == nil)
    }

    @Test func degradingNeverComesAfterTheTimeout() {
        let detector = WriteStallDetector(timeout: .seconds(2), degradeAfter: .seconds(10))
        #expect(detector.degradeAfter == .seconds(2))
    }
}

/// A peer that never reads: the link to it is dropped after `link_write_stall_timeout_ms`
/// of the injected clock, and the sends waiting on it escalate to another link instead
/// of hanging.
@Suite struct WriteStallTests {
    @Test(.timeLimit(.minutes(3))) func aLinkWhoseRemoteStopsReadingIsDroppedAndSendsEscalate() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = RouterTests.testConfiguration
        configuration.keepaliveInterval = .seconds(600)  // only the stall may end the link
        configuration.linkWriteStallTimeout = .seconds(3)
        let a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            clock: clock,
            logger: logger
        )
        let b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            logger: logger
        )
        for (name, priority) in [("lo10", 10), ("lo20", 20)] {
            // A 64-frame buffer of 1,024-byte frames: one 64 KB chunk fills it.
            await a.add(LoopbackTransport(name: name, address: "A", network: network), priority: priority)
            await b.add(LoopbackTransport(name: name, address: "B", network: network), priority: priority)
        }
        let events = await a.events()
        let downs = Mutex<[RouterEvent]>([])
        let watcher = Task {
            for await event in events where event.kind == .linkDown { downs.withLock { $0.append(event) } }
        }
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        defer { for run in runs { run.cancel() } }
        try await waitUntil("links on lo10 and lo20") {
            Set(await a.peers().first?.links.map(\.transport) ?? []) == ["lo10", "lo20"]
        }

        // B stops reading its lo10 link; A's writes there fill the buffer and wait.
        network.stopReading(at: "B", from: "A", transport: "lo10")
        let payload = [UInt8]((0..<300_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        let peer = b.localPeerID
        let sent = Mutex(false)
        let send = Task {
            defer { sent.withLock { $0 = true } }
            try await a.send(to: peer, payload: payload)
        }
        try await waitUntil("a write to lo10 waits") {
            await a.peers().first?.links.first { $0.transport == "lo10" }?.framesSent ?? 0 > 0
        }
        // Time passes on A's clock only; the stall timeout ends the lo10 link.
        for _ in 0..<2_000 where downs.withLock({ $0.isEmpty }) {
            clock.advance(by: .milliseconds(250))
            try await Task.sleep(for: .milliseconds(2))  // lets the woken tasks run; time itself is the clock's
        }
        let down = try #require(downs.withLock { $0.first })
        #expect(down.transport == "lo10")
        #expect(down.reason?.contains("stopped reading") == true, "\(down.reason ?? "")")
        // The send did not hang: the chunks waiting on lo10 went out on lo20.
        for _ in 0..<2_000 where !sent.withLock({ $0 }) {
            clock.advance(by: .milliseconds(250))
            try await Task.sleep(for: .milliseconds(2))
        }
        _ = try await send.value
        #expect(await b.incoming.receive()?.payload == payload)
        let stats = await a.stats()
        #expect(stats.transports["lo20"]?.framesSent ?? 0 > 0)
        #expect(stats.writeStalledLinksClosed == 1)
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
        watcher.cancel()
    }
}
