import Logging
import MeshCore
import Synchronization
import TransportLoopback

extension TransportConformance {
    /// Two transports under test and the inbound links B receives.
    final class Pair: Sendable {
        let harness: Harness
        let a: RunningTransport
        private let b: Mutex<RunningTransport>
        private let inbound = BoundedChannel<any Link>(capacity: 64)
        let hintB: PeerHint

        private init(harness: Harness, a: RunningTransport, b: RunningTransport, hintB: PeerHint) {
            self.harness = harness
            self.a = a
            self.b = Mutex(b)
            self.hintB = hintB
        }

        static func make(_ harness: Harness) async throws -> Pair {
            let a = try await harness.makeTransport(0)
            let b = try await harness.makeTransport(1)
            var logger = Logger(label: "conformance")
            logger.logLevel = .warning
            let runningA = try await RunningTransport.start(a, logger: logger)
            let runningB: RunningTransport
            do {
                runningB = try await RunningTransport.start(b, logger: logger)
            } catch {
                await runningA.stop()
                throw error
            }
            let hint = try await harness.hint(b, 1)
            let pair = Pair(harness: harness, a: runningA, b: runningB, hintB: hint)
            pair.drain(runningA, intoInbound: false)
            pair.drain(runningB, intoInbound: true)
            return pair
        }

        private func drain(_ transport: RunningTransport, intoInbound: Bool) {
            let inbound = self.inbound
            Task {
                for await event in transport.events {
                    if case .inboundLink(let link) = event {
                        if intoInbound { await inbound.send(link) } else { await link.close() }
                    }
                }
            }
        }

        /// Dials B from A and returns (dialled end, accepted end).
        func connect(skipping stray: (@Sendable (any Link) -> Void)? = nil) async throws -> (any Link, any Link) {
            let dialled = try await a.transport.dial(hintB)
            // The accepted end whose first frame is our probe is ours; others (from
            // malformed injections) go to `stray`.
            let probe: [UInt8] = [0x50, 0x52, 0x4F, 0x42, 0x45]
            try await dialled.send(probe)
            while true {
                guard let candidate = await inbound.receive() else {
                    throw ConformanceFailure(failures: ["B stopped reporting inbound links"])
                }
                if stray == nil {
                    guard try await candidate.receive() == probe else {
                        throw ConformanceFailure(failures: [
                            "the accepted link's first frame was not the dialler's first frame"
                        ])
                    }
                    return (dialled, candidate)
                }
                let first = try? await candidate.receive()
                if first == probe { return (dialled, candidate) }
                stray?(candidate)
            }
        }

        func stopB() async {
            let b = self.b.withLock { $0 }
            await b.stop()
        }

        func restartB() async throws {
            let b = try await harness.makeTransport(1)
            var logger = Logger(label: "conformance")
            logger.logLevel = .warning
            let running = try await RunningTransport.start(b, logger: logger)
            self.b.withLock { $0 = running }
            drain(running, intoInbound: true)
        }

        func stop() async {
            await a.stop()
            await stopB()
            inbound.finish()
        }
    }
}

/// The checks of ``TransportConformance`` that failed, each with its reason.
public struct ConformanceFailure: Error, CustomStringConvertible {
    /// One line per failed check.
    public var failures: [String]

    public var description: String {
        "transport conformance failed:\n" + failures.map { "  - \($0)" }.joined(separator: "\n")
    }
}

extension TransportConformance.Harness {
    /// The harness for TransportLoopback's `LoopbackTransport`. Its buffer is counted in
    /// frames, so the back-pressure bound is 64 full buffers: a tiny MTU does not turn
    /// the check into 200,000 single-frame hops (which, on a busy machine, outlasted
    /// the hang guard).
    public static func loopback(configuration: LoopbackTransport.Configuration = .init()) -> Self {
        let network = LoopbackNetwork()
        return Self(
            makeTransport: { index in
                LoopbackTransport(address: "node\(index)", network: network, configuration: configuration)
            },
            hint: { transport, _ in (transport as! LoopbackTransport).hint },
            deadHint: PeerHint(transport: "loopback", address: "nobody-here"),
            injectMalformed: nil,
            backPressureLimitBytes: configuration.bufferFrames * configuration.mtu * 64
        )
    }
}
