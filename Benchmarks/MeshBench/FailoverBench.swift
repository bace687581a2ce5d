import Logging
import MeshCore
import Synchronization
import TransportLoopback

/// A steady stream over two transports, the preferred one killed mid-stream: the gap
/// until messages flow again on the next, and what was lost or duplicated, with the
/// default escalation settings.
enum FailoverBench {
    /// Records when each message arrived at B.
    final class Recorder: MessageSink {
        let arrivals = Mutex<[(index: Int, at: ContinuousClock.Instant)]>([])

        func accept(_ message: InboundMessage) async throws {
            let index = message.payload.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            let now = ContinuousClock.now
            arrivals.withLock { $0.append((index, now)) }
        }
    }

    struct Outcome {
        var gapMilliseconds: Double
        var normalGapMilliseconds: Double
        var sent: Int
        var lost: Int
        var duplicated: Int
    }

    /// One run: `silent` silences the preferred transport's link (frames vanish, found
    /// by the ack timeout); otherwise it is partitioned (its links fail at once).
    static func once(
        silent: Bool,
        interval: Duration = .milliseconds(1),
        total: Duration = .seconds(3)
    ) async throws -> Outcome {
        let network = LoopbackNetwork()
        let recorder = Recorder()
        let a = Router(security: PlaintextLinkSecurity(localPeerID: .random()), logger: RouterBench.quietLogger)
        let b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            sink: recorder,
            logger: RouterBench.quietLogger
        )
        for (name, priority) in [("preferred", 10), ("next", 20)] {
            await a.add(LoopbackTransport(name: name, address: "a", network: network), priority: priority)
            await b.add(LoopbackTransport(name: name, address: "b", network: network), priority: priority)
        }
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        defer { for run in runs { run.cancel() } }
        for _ in 0..<2000 {
            if await a.peers().first?.links.count == 2 { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let peer = b.localPeerID
        let start = ContinuousClock.now
        let killAt = start + total / 2
        var killedAt: ContinuousClock.Instant?
        var sent = 0
        try await withThrowingDiscardingTaskGroup { group in
            var next = start
            while ContinuousClock.now - start < total {
                if killedAt == nil, ContinuousClock.now >= killAt {
                    killedAt = ContinuousClock.now
                    if silent {
                        network.silenceLinks(between: "a", and: "b", transport: "preferred")
                    } else {
                        network.partition("a", "b", transport: "preferred")
                    }
                }
                let index = sent
                sent += 1
                group.addTask {
                    var payload = [UInt8](repeating: 0, count: 64)
                    withUnsafeBytes(of: UInt32(index).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
                    try await a.send(to: peer, payload: payload, waitUntil: .delivered)
                }
                next += interval
                try await Task.sleep(until: next, clock: .continuous)
            }
        }
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
        let arrivals = recorder.arrivals.withLock { $0 }
        let unique = Set(arrivals.map(\.index))
        let times = arrivals.map(\.at)
        var gap = Duration.zero
        var before: [Duration] = []
        for (previous, current) in zip(times, times.dropFirst()) {
            let delta = current - previous
            if let killedAt, current >= killedAt { gap = max(gap, delta) } else { before.append(delta) }
        }
        before.sort()
        return Outcome(
            gapMilliseconds: TCPBench.seconds(gap) * 1000,
            normalGapMilliseconds: before.isEmpty ? 0 : TCPBench.seconds(before[before.count * 99 / 100]) * 1000,
            sent: sent,
            lost: sent - unique.count,
            duplicated: arrivals.count - unique.count
        )
    }

    static func run() async throws -> [BenchFigure] {
        var figures: [BenchFigure] = []
        for silent in [true, false] {
            let label = silent ? "silent link" : "link failed"
            let outcome = try await once(silent: silent)
            figures.append(
                BenchFigure(
                    name: "failover \(label): longest gap in deliveries after the kill",
                    value: outcome.gapMilliseconds,
                    unit: "ms",
                    baseline: ("p99 gap between deliveries before the kill", outcome.normalGapMilliseconds)
                )
            )
            figures.append(
                BenchFigure(
                    name: "failover \(label): messages lost of \(outcome.sent)",
                    value: Double(outcome.lost),
                    unit: "msgs"
                )
            )
            figures.append(
                BenchFigure(
                    name: "failover \(label): messages duplicated of \(outcome.sent)",
                    value: Double(outcome.duplicated),
                    unit: "msgs"
                )
            )
        }
        return figures
    }
}
