import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Hop acknowledgements on a link that loses a frame and stays up (docs/PROTOCOL.md
/// §A.3, "Hop sequence numbers and ACKs on the receiving side"), as links in the
/// simulator do: the number of a DATA frame that never arrived must not stop the link
/// from acknowledging what comes after it.
@Suite struct LossyLinkTests {
    /// A and B on one manual clock; A's first DATA frame to B is lost on the way
    /// (`FrameDropTransport`), B's ACKs are watched on the way out.
    ///
    /// - A's lost message is retried with number 2, and 300 more follow: each is
    ///   acknowledged once, although B holds all of them above the missing number 1
    ///   (before: past the 256 lowest, none was listed in an ACK, so every later frame
    ///   on the link timed out, for good).
    /// - Twice `ack_timeout_max` after number 2 arrived, B counts 1 as consumed and its
    ///   next ACK is cumulative over all of them.
    @Test(.timeLimit(.minutes(3))) func aLostFrameDoesNotStopTheLinkFromAcknowledgingLaterOnes() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let configuration = RouterConfiguration(
            escalation: EscalationConfiguration(
                ackTimeoutMin: .milliseconds(500),
                ackTimeoutMax: .seconds(5),
                maxAttempts: 3
            ),
            reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200))
        )
        let a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            clock: clock,
            logger: logger
        )
        let b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            clock: clock,
            logger: logger
        )
        let lossy = FrameDropTransport(
            LoopbackTransport(name: "lo", address: "A", network: network),
            dropping: 1,
            of: Frame.Kind.data.rawValue
        )
        let acks = FrameDropTransport(
            LoopbackTransport(name: "lo", address: "B", network: network),
            dropping: 0,
            of: Frame.Kind.ack.rawValue
        )
        await a.add(lossy, priority: 10)
        await b.add(acks, priority: 10)
        let events = await a.events()
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        for await event in events where event.kind == .linkUp { break }

        func advanceUntil(_ what: String, _ done: @Sendable () async -> Bool) async throws {
            for _ in 0..<2_000 {
                if await done() { return }
                clock.advance(by: .milliseconds(250))
                try await Task.sleep(for: .milliseconds(2))  // lets the woken tasks run; time is the clock's
            }
            Issue.record("timed out waiting until \(what)")
        }
        // A bare router (no receipt signer) counts the hop acknowledgement as delivery.
        let first = try await a.send(to: b.localPeerID, payload: [0])
        try await advanceUntil("the lost message is acknowledged") { await a.status(of: first)?.status == .delivered }
        #expect(lossy.dropped.load(ordering: .relaxed) == 1)
        #expect(await a.stats().ackTimeouts == 1)

        let later = try await withThrowingTaskGroup(of: MessageID.self) { group in
            for index in 1...300 {
                group.addTask { try await a.send(to: b.localPeerID, payload: [UInt8(index % 256)]) }
            }
            return try await group.reduce(into: [MessageID]()) { $0.append($1) }
        }
        // No clock moves: every one is acknowledged without waiting for a timeout.
        var waiting = later.count
        for _ in 0..<4_000 where waiting > 0 {
            try await Task.sleep(for: .milliseconds(5))  // polls; no time has to pass
            waiting = 0
            for id in later where await a.status(of: id)?.status != .delivered { waiting += 1 }
        }
        #expect(waiting == 0, "every later message acknowledged with the clock standing still")
        #expect(await a.stats().ackTimeouts == 1, "none of the later frames waited for its acknowledgement in vain")
        #expect(await a.stats().retries == 1)

        // B's ACKs: the cumulative point stays below the missing number 1 until the hold
        // (2 × 5 s) has passed since number 2 arrived, then covers all 302 numbers.
        @Sendable func cumulatives() -> [UInt32] {
            acks.passed.withLock { packets in
                packets.map { UInt32($0[5]) << 24 | UInt32($0[6]) << 16 | UInt32($0[7]) << 8 | UInt32($0[8]) }
            }
        }
        try await advanceUntil("B acknowledges every number cumulatively") { cumulatives().last == 302 }
        let seen = cumulatives()
        #expect(seen.first == 0)
        #expect(seen.allSatisfy { $0 == 0 || $0 == 302 }, "nothing moved before the hold ended")

        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
    }
}
