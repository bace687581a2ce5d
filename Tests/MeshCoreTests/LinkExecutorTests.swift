import Dispatch
import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// A link's `preferredTaskExecutor` is where the core runs that link's tasks: with one,
/// every `receive()` of the handshake and the session (and what the reader does after
/// it) runs on that executor; without one (the default) nothing runs there.
@Suite struct LinkExecutorTests {
    /// A task executor on a serial dispatch queue of its own, marked so that code can
    /// tell it runs there; counts the jobs it was given.
    final class MarkedExecutor: TaskExecutor {
        let queue = DispatchQueue(label: "LinkExecutorTests.MarkedExecutor")
        let marker = Marker()
        let jobs = Atomic<Int>(0)

        /// The key of the queue's specific (one per executor). Unchecked: the key is
        /// immutable, and dispatch's specific-value calls are thread-safe.
        final class Marker: @unchecked Sendable {
            let key = DispatchSpecificKey<ObjectIdentifier>()
        }

        init() {
            queue.setSpecific(key: marker.key, value: ObjectIdentifier(marker))
        }

        func enqueue(_ job: consuming ExecutorJob) {
            jobs.add(1, ordering: .relaxed)
            let job = UnownedJob(job)
            let executor = asUnownedTaskExecutor()
            queue.async { job.runSynchronously(on: executor) }
        }

        /// Whether the calling code runs on this executor.
        var isCurrent: Bool { DispatchQueue.getSpecific(key: marker.key) == ObjectIdentifier(marker) }
    }

    /// Where a transport's links' `receive()` calls ran: on the marked executor or not
    /// (checked as the call starts and again when it resumes after the inner link's wait).
    final class ReceiveLog: Sendable {
        let onExecutor = Atomic<Int>(0)
        let elsewhere = Atomic<Int>(0)

        func note(_ on: Bool) {
            if on { onExecutor.add(1, ordering: .relaxed) } else { elsewhere.add(1, ordering: .relaxed) }
        }
    }

    /// Wraps a transport: its links prefer `preferred` (nil: no preference) and log, in
    /// `log`, whether each `receive()` ran on `marked`.
    final class PreferringTransport: Transport {
        let inner: any Transport
        let preferred: MarkedExecutor?
        let marked: MarkedExecutor
        let log = ReceiveLog()

        init(_ inner: any Transport, preferred: MarkedExecutor?, marked: MarkedExecutor) {
            self.inner = inner
            self.preferred = preferred
            self.marked = marked
        }

        var name: String { inner.name }
        var capabilities: TransportCapabilities { inner.capabilities }

        func listen(context: TransportContext) async throws {
            let wrapped = TransportContext(localPeerID: context.localPeerID, logger: context.logger) { [self] event in
                if case .inboundLink(let link) = event {
                    context.report(.inboundLink(PreferringLink(inner: link, transport: self)))
                } else {
                    context.report(event)
                }
            }
            try await inner.listen(context: wrapped)
        }

        func dial(_ hint: PeerHint) async throws -> any Link {
            PreferringLink(inner: try await inner.dial(hint), transport: self)
        }
    }

    /// One link of a ``PreferringTransport``.
    final class PreferringLink: Link {
        let inner: any Link
        let transport: PreferringTransport

        init(inner: any Link, transport: PreferringTransport) {
            self.inner = inner
            self.transport = transport
        }

        var remoteAddress: String { inner.remoteAddress }
        var mtu: Int { inner.mtu }
        var preferredTaskExecutor: (any TaskExecutor)? { transport.preferred }

        func send(_ frame: [UInt8]) async throws { try await inner.send(frame) }

        func receive() async throws -> [UInt8]? {
            transport.log.note(transport.marked.isCurrent)
            let frame = try await inner.receive()
            if frame != nil { transport.log.note(transport.marked.isCurrent) }
            return frame
        }

        func close() async { await inner.close() }
    }

    /// Runs A (a plain loopback transport) and B (its links wrapped, preferring
    /// `preferred`), sends messages both ways; returns B's receive log.
    static func exchange(preferred: MarkedExecutor?, marked: MarkedExecutor) async throws -> ReceiveLog {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let network = LoopbackNetwork()
        let a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: RouterTests.testConfiguration,
            logger: logger
        )
        let b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: RouterTests.testConfiguration,
            logger: logger
        )
        await a.add(LoopbackTransport(address: "A", network: network), priority: 10)
        let wrapped = PreferringTransport(
            LoopbackTransport(address: "B", network: network),
            preferred: preferred,
            marked: marked
        )
        await b.add(wrapped, priority: 10)
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        defer { for run in runs { run.cancel() } }
        try await eventually("A and B have a link") {
            let aSeesB = await a.peers().contains { $0.peer == b.localPeerID }
            let bSeesA = await b.peers().contains { $0.peer == a.localPeerID }
            return aSeesB && bSeesA
        }
        for index in 0..<10 {
            let payload = [UInt8](repeating: UInt8(index), count: 300)
            try await a.send(to: b.localPeerID, payload: payload, waitUntil: .sent, timeout: .seconds(10))
            try await b.send(to: a.localPeerID, payload: payload, waitUntil: .sent, timeout: .seconds(10))
        }
        for _ in 0..<10 {
            #expect(await b.incoming.receive()?.payload.count == 300)
            #expect(await a.incoming.receive()?.payload.count == 300)
        }
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
        return wrapped.log
    }

    @Test(.timeLimit(.minutes(3))) func aLinkThatPrefersAnExecutorIsReadOnIt() async throws {
        let executor = MarkedExecutor()
        let log = try await Self.exchange(preferred: executor, marked: executor)
        // Handshake and session reads, each noted as it starts and as it resumes.
        #expect(log.onExecutor.load(ordering: .relaxed) >= 20)
        #expect(log.elsewhere.load(ordering: .relaxed) == 0)
        #expect(executor.jobs.load(ordering: .relaxed) > 0)
    }

    @Test(.timeLimit(.minutes(3))) func withoutAPreferenceNothingRunsThere() async throws {
        let executor = MarkedExecutor()
        let log = try await Self.exchange(preferred: nil, marked: executor)
        #expect(log.onExecutor.load(ordering: .relaxed) == 0)
        #expect(log.elsewhere.load(ordering: .relaxed) >= 20)
        #expect(executor.jobs.load(ordering: .relaxed) == 0)
    }

    @Test func theDefaultIsNoPreference() async throws {
        let network = LoopbackNetwork()
        let (stream, continuation) = AsyncStream.makeStream(of: (any Link).self)
        let x = LoopbackTransport(address: "x", network: network, configuration: .init(discovery: false))
        let y = LoopbackTransport(address: "y", network: network, configuration: .init(discovery: false))
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let runningX = try await RunningTransport.start(x, logger: logger)
        let runningY = try await RunningTransport.start(y, logger: logger)
        let accepted = Task {
            for await event in runningY.events {
                if case .inboundLink(let link) = event {
                    continuation.yield(link)
                    return
                }
            }
        }
        let link = try await x.dial(y.hint)
        #expect(link.preferredTaskExecutor == nil)
        await accepted.value
        for await remote in stream {
            #expect(remote.preferredTaskExecutor == nil)
            break
        }
        await link.close()
        await runningX.stop()
        await runningY.stop()
    }
}
