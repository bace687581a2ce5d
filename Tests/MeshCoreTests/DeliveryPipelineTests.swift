import Foundation
import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// A sink whose answers the test scripts: each offer is reported on `offers`; it
/// refuses while `refusing` is true and may hold an offer until `release()`.
final class ScriptedSink: MessageSink {
    private struct State {
        var refusing: Bool
        var holding: Bool
        var held: [CheckedContinuation<Void, Never>] = []
        var accepted: [InboundMessage] = []
    }

    let offers: AsyncStream<InboundMessage>
    private let offerContinuation: AsyncStream<InboundMessage>.Continuation
    private let state: Mutex<State>

    init(refusing: Bool = false, holding: Bool = false) {
        (offers, offerContinuation) = AsyncStream.makeStream(of: InboundMessage.self)
        state = Mutex(State(refusing: refusing, holding: holding))
    }

    var accepted: [InboundMessage] { state.withLock { $0.accepted } }

    func setRefusing(_ refusing: Bool) { state.withLock { $0.refusing = refusing } }

    func release() {
        let held = state.withLock { state in
            state.holding = false
            defer { state.held.removeAll() }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }

    func accept(_ message: InboundMessage) async throws {
        // Decided before the offer is reported: a test that stops refusing once it saw
        // an offer must not turn that offer into an accepted one.
        let refusing = state.withLock { $0.refusing }
        offerContinuation.yield(message)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let hold = state.withLock { state in
                if state.holding { state.held.append(continuation) }
                return state.holding
            }
            if !hold { continuation.resume() }
        }
        if refusing { throw MeshError(.notRunning, "scripted refusal") }
        state.withLock { $0.accepted.append(message) }
    }
}

/// Two routers on one loopback network: A sends on a manual clock, B hands what
/// arrives to a scripted sink.
struct CustodyPair {
    let network = LoopbackNetwork()
    let clock = ManualClock()
    let sink: ScriptedSink
    let a: Router
    let b: Router
    let runs: [Task<Void, Never>]

    init(sink: ScriptedSink) async throws {
        self.sink = sink
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
        a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            clock: clock,
            logger: logger
        )
        b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            sink: sink,
            logger: logger
        )
        await a.add(LoopbackTransport(name: "lo", address: "A", network: network), priority: 10)
        await b.add(LoopbackTransport(name: "lo", address: "B", network: network), priority: 10)
        let events = await a.events()
        let (a, b) = (a, b)
        runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        // The lower peer ID dials at once, so no clock has to move for the link.
        for await event in events where event.kind == .linkUp { break }
    }

    /// Moves A's clock forward in ack-timeout steps until `done` says so; throws when
    /// 2,000 steps did not do it.
    func advanceUntil(_ done: @Sendable () async -> Bool) async throws {
        for _ in 0..<2_000 {
            if await done() { return }
            clock.advance(by: .seconds(1))
            try await Task.sleep(for: .milliseconds(2))  // lets the woken tasks run; time itself is the clock's
        }
        throw MeshError(.timedOut, "not done after 2,000 s on A's clock")
    }

    func stop() async {
        sink.release()
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
    }
}

@Suite struct DeliveryPipelineTests {
    /// Custody: a message the sink refuses is not acknowledged; the sender times out
    /// (on its clock), retries, and the message is delivered exactly once.
    @Test func aRefusedMessageIsRetriedAndDeliveredOnce() async throws {
        let sink = ScriptedSink(refusing: true)
        let pair = try await CustodyPair(sink: sink)
        let send = Task { try await pair.a.send(to: pair.b.localPeerID, payload: [1, 2, 3], waitUntil: .delivered) }
        var offers = sink.offers.makeAsyncIterator()
        _ = await offers.next()  // refused
        sink.setRefusing(false)
        let delivered = Mutex(false)
        let watcher = Task {
            _ = await offers.next()
            delivered.withLock { $0 = true }
        }
        try await pair.advanceUntil { delivered.withLock { $0 } }
        let id = try await send.value
        await watcher.value
        #expect(sink.accepted.map(\.payload) == [[1, 2, 3]])
        #expect(await pair.b.stats().sinkRefusals == 1)
        let stats = await pair.a.stats()
        #expect(stats.ackTimeouts >= 1)
        #expect(stats.retries >= 1)
        #expect(await pair.a.status(of: id)?.status == .delivered)
        // The refused sequence number does not block the link: more messages flow.
        for value in UInt8(10)..<20 {
            try await pair.a.send(to: pair.b.localPeerID, payload: [value], waitUntil: .delivered)
        }
        #expect(sink.accepted.count == 11)
        await pair.stop()
    }

    /// A sink that never takes the message: every attempt times out, the message stays
    /// queued with the reason recorded and is retried on the backoff (on the router's
    /// clock); it is never delivered, and nothing is lost.
    @Test func aMessageTheSinkAlwaysRefusesStaysQueuedAndIsRetried() async throws {
        let sink = ScriptedSink(refusing: true)
        let pair = try await CustodyPair(sink: sink)
        let events = await pair.a.events()
        let id = try await pair.a.send(to: pair.b.localPeerID, payload: [9])
        try await pair.advanceUntil { await pair.a.stats().deliveryRetries >= 2 }
        let record = try #require(await pair.a.status(of: id))
        #expect(record.status == .queued)
        #expect(record.attempts >= 2)
        #expect(record.reason?.contains("acknowledged") == true)
        #expect(sink.accepted.isEmpty)
        var kinds: [RouterEvent.Kind] = []
        for await event in events {
            kinds.append(event.kind)
            if event.kind == .messageRetrying { break }
        }
        #expect(kinds.contains(.messageQueued))
        // Once the sink takes messages again, the next retry delivers it, once.
        sink.setRefusing(false)
        try await pair.advanceUntil { await pair.a.status(of: id)?.status == .delivered }
        #expect(sink.accepted.map(\.payload) == [[9]])
        await pair.stop()
    }

    /// Cancelling a caller that waits for its message's delivery ends the wait at
    /// once, without any clock moving; the message itself stays in the queue.
    @Test func aSendWaitingForItsAckEndsWhenCancelled() async throws {
        let sink = ScriptedSink(holding: true)
        let pair = try await CustodyPair(sink: sink)
        let send = Task { try await pair.a.send(to: pair.b.localPeerID, payload: [7], waitUntil: .delivered) }
        var offers = sink.offers.makeAsyncIterator()
        _ = await offers.next()  // B holds it: no ack will come
        send.cancel()
        let result = await send.result
        #expect(throws: CancellationError.self) { try result.get() }
        await pair.stop()
    }

    /// The handshake deadline runs on the router's clock.
    @Test func aSilentLinkFailsItsHandshakeWhenTheClockPassesTheDeadline() async throws {
        let network = LoopbackNetwork()
        let clock = ManualClock()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: RouterConfiguration(handshakeTimeout: .seconds(10)),
            clock: clock,
            logger: Logger(label: "t")
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let events = await router.events()
        let run = Task { try? await router.run() }
        for await event in events where event.kind == .transportStarted { break }
        let silent = LoopbackTransport(
            name: "lo",
            address: "S",
            network: network,
            configuration: .init(discovery: false)
        )
        let running = try await RunningTransport.start(silent)
        let link = try await silent.dial(PeerHint(transport: "lo", address: "R"))
        await clock.waitForSleepers(atLeast: 2)  // the log limiter's interval and the handshake deadline
        clock.advance(by: .seconds(11))
        var failure: RouterEvent?
        for await event in events where event.kind == .handshakeFailed {
            failure = event
            break
        }
        #expect(failure?.reason?.contains("no handshake") == true)
        // The router closed the link: after its hello, the silent end reads the end.
        while (try? await link.receive()) != nil {}
        #expect(await router.stats().handshakeFailures == 1)
        await running.stop()
        await router.shutdown()
        await run.value
    }

    /// A message left queued (as a persistent queue would hold it across a restart)
    /// is claimed and sent when a link to its destination comes up.
    @Test func aQueuedMessageIsSentWhenALinkComesUp() async throws {
        let queue = InMemoryOutboundQueue()
        let network = LoopbackNetwork()
        let sink = ScriptedSink()
        let a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            queue: queue,
            logger: Logger(label: "a")
        )
        let b = Router(security: PlaintextLinkSecurity(localPeerID: .random()), sink: sink, logger: Logger(label: "b"))
        let id = MessageID.random()
        try await queue.enqueue(OutboundMessage(id: id, destination: b.localPeerID, payload: [4, 2], flags: 0))
        await a.add(LoopbackTransport(name: "lo", address: "A", network: network), priority: 10)
        await b.add(LoopbackTransport(name: "lo", address: "B", network: network), priority: 10)
        let events = await a.events()
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        for await event in events where event.kind == .messageDelivered {
            #expect(event.messageID == id)
            break
        }
        #expect(sink.accepted.map(\.payload) == [[4, 2]])
        #expect(await queue.record(id)?.status == .delivered)
        #expect(queue.pendingCount == 0)
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
    }

    @Test func routerEventsRoundTripThroughJSONWithAKindAndSnakeCaseKeys() throws {
        let peer = try PeerID(bytes: [UInt8](repeating: 1, count: 32))
        let event = RouterEvent(
            .messageSent,
            transport: "tcp",
            peer: peer,
            link: LinkID(rawValue: 3),
            messageID: .random()
        )
        let json = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        #expect(json.contains(#""kind":"message_sent""#))
        #expect(json.contains(#""message_id":""#))
        #expect(json.contains(#""link":3"#))
        #expect(try JSONDecoder().decode(RouterEvent.self, from: Data(json.utf8)) == event)
        // A kind this build does not know still decodes (the set is extensible).
        let future = try JSONDecoder().decode(
            RouterEvent.self,
            from: Data(#"{"kind":"route_learned","reason":"x"}"#.utf8)
        )
        #expect(future.kind == RouterEvent.Kind("route_learned"))
        #expect(future.reason == "x")
        let state = try JSONDecoder().decode([TransportState].self, from: Data(#"["running","sleeping"]"#.utf8))
        #expect(state == [.running, TransportState("sleeping")])
    }
}
