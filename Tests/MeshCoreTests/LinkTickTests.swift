import Logging
import MeshTesting
import Synchronization
import Testing

@testable import MeshCore

/// The session's ticker sleeps until something is due: an idle link costs a few
/// wake-ups a minute instead of one per 50 ms tick, and an ack timeout still fires at
/// its deadline, not before and not a tick late.
@Suite struct LinkTickTests {
    /// A link to a remote that never answers: sends vanish, reads wait until it closes.
    final class SilentLink: Link {
        let remoteAddress = "silent"
        let mtu = 1024
        private let closed = AsyncStream<Void>.makeStream()

        func send(_ frame: [UInt8]) async throws {}

        func receive() async throws -> [UInt8]? {
            for await _ in closed.stream {}
            return nil
        }

        func close() async { closed.continuation.finish() }
    }

    static func session(clock: ManualClock) -> LinkSession {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var configuration = RouterConfiguration()
        configuration.keepaliveInterval = .seconds(600)  // no ping, no dead link within the test
        let capabilities = TransportCapabilities(
            maxFrameSize: 1024,
            nominalBitrate: 1_000_000,
            isReliable: true,
            needsDiscovery: false,
            powerCost: 1
        )
        return LinkSession(
            link: SilentLink(),
            id: .next(),
            transport: "silent",
            priority: 0,
            capabilities: capabilities,
            remote: .random(),
            role: .initiator,
            cipher: PlaintextCipher(),
            configuration: configuration,
            clock: clock,
            stats: StatsRecorder(),
            logger: logger
        )
    }

    /// Runs `session` until the test ends; returns the task.
    static func start(_ session: LinkSession) -> Task<String, Never> {
        Task {
            await session.run(
                LinkSession.Handlers(
                    deliver: { _, _ in .accepted },
                    announce: { _, _ in },
                    topic: { _, _ in },
                    onMalformed: { _ in }
                )
            )
        }
    }

    /// Moves `clock` forward in `step`s for `span`, letting the ticker act after each
    /// step (it sleeps on the clock again before the next).
    static func advance(_ clock: ManualClock, by span: Duration, step: Duration) async {
        var passed = Duration.zero
        while passed < span {
            clock.advance(by: step)
            passed += step
            await clock.waitForSleepers(atLeast: 1)
        }
    }

    @Test(.timeLimit(.minutes(3))) func anIdleLinkDoesNotWakeEveryTick() async throws {
        let clock = ManualClock()
        let session = Self.session(clock: clock)
        let run = Self.start(session)
        defer { run.cancel() }
        await clock.waitForSleepers(atLeast: 1)
        // A virtual minute of idleness in 50 ms steps: 1,200 steps.
        await Self.advance(clock, by: .seconds(60), step: .milliseconds(50))
        let wakes = session.ticker.wakes.load(ordering: .relaxed)
        // It still looks now and then (at most `degradeAfter`, here 10 s, apart, so a
        // write that starts meanwhile is watched), but not per tick.
        #expect(wakes >= 5)
        #expect(wakes <= 8)
        #expect(!session.isClosed)
    }

    @Test(.timeLimit(.minutes(3))) func anAckTimeoutFiresAtItsDeadline() async throws {
        let clock = ManualClock()
        let session = Self.session(clock: clock)
        let run = Self.start(session)
        defer { run.cancel() }
        await clock.waitForSleepers(atLeast: 1)
        let start = clock.now
        // Idle first: the ticker plans its next look seconds ahead.
        await Self.advance(clock, by: .seconds(3), step: .milliseconds(500))
        let frame = DataFrame(
            sequence: 0,
            messageID: MessageID(high: 1, low: 2),
            origin: .random(),
            destination: .random(),
            ttl: 8,
            chunkIndex: 0,
            chunkCount: 1,
            messageLength: 3,
            payload: [1, 2, 3]
        )
        let failure = Mutex<MeshError?>(nil)
        let send = Task {
            do {
                try await session.sendData(frame, timeout: .milliseconds(1500))
            } catch let error as MeshError {
                failure.withLock { $0 = error }
            } catch {}
        }
        defer { send.cancel() }
        try await eventually("the frame waits for its ack") {
            session.state.withLock { $0.waiters.values.contains { $0.deadline != nil } }
        }
        let wakesBefore = session.ticker.wakes.load(ordering: .relaxed)
        // Sent at 3 s, so due at 4.5 s: nothing fires at 4.4 s (the waiter is still there,
        // and the ticker woke at most once for the new waiter)...
        await Self.advance(clock, by: .milliseconds(1400), step: .milliseconds(100))
        #expect(clock.now - start == .milliseconds(4400))
        #expect(session.state.withLock { $0.waiters.count } == 1)
        #expect(session.ticker.wakes.load(ordering: .relaxed) - wakesBefore <= 1)
        // ...and at 4.5 s the send fails with an ack timeout.
        clock.advance(by: .milliseconds(100))
        try await eventually("the send failed") { failure.withLock { $0 } != nil }
        #expect(failure.withLock { $0?.code } == .ackTimeout)
        #expect(session.state.withLock { $0.waiters.isEmpty })
        #expect(session.state.withLock { $0.consecutiveFailures } == 1)
    }
}
