import Logging
import MeshCore
import MeshCrypto
import Synchronization
import TestSupport
import Testing
import TransportTCP

#if canImport(Glibc)
import Glibc
#endif

/// Counts the log lines a node writes at its default level (`info`) and keeps the
/// first few for the failure message.
final class LineCounter: Sendable {
    private let state = Mutex<(count: Int, first: [String])>((0, []))

    var count: Int { state.withLock { $0.count } }
    var sample: [String] { state.withLock { $0.first } }

    func logger(_ label: String) -> Logger {
        Logger(label: label) { _ in Handler(counter: self) }
    }

    struct Handler: LogHandler {
        let counter: LineCounter
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            counter.state.withLock { state in
                state.count += 1
                if state.first.count < 40 { state.first.append("\(event.level): \(event.message)") }
            }
        }
    }
}

/// A router on a real TCP transport, run in the background.
struct TCPNode {
    let router: Router
    let transport: TCPTransport
    let run: Task<Void, Never>

    static func start(
        security: any LinkSecurity,
        configuration: RouterConfiguration,
        tcp: TCPTransport.Configuration,
        logger: Logger
    ) async throws -> TCPNode {
        let router = Router(security: security, configuration: configuration, logger: logger)
        let transport = TCPTransport(configuration: tcp)
        await router.add(transport, priority: 30)
        let events = await router.events()
        let run = Task<Void, Never> { _ = try? await router.run() }
        for await event in events where event.kind == .transportStarted || event.kind == .transportUnavailable { break }
        return TCPNode(router: router, transport: transport, run: run)
    }

    var address: String {
        get throws { try #require(transport.boundAddresses.first) }
    }

    func stop() async {
        await router.shutdown()
        await run.value
    }
}

@Suite(.serialized) struct TCPHostilePeerTests {
    static let configuration = RouterConfiguration(
        escalation: EscalationConfiguration(
            ackTimeoutMin: .milliseconds(500),
            ackTimeoutMax: .seconds(5),
            maxAttempts: 4
        ),
        reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200))
    )

    /// Done means of issue 16: 300 idle connections from 300 loopback addresses, each
    /// re-opened as soon as it is dropped, while an honest node connects over Noise and
    /// exchanges messages; the node's log stays under a fixed number of lines.
    @Test(.timeLimit(.minutes(3))) func idleFloodFromManyAddressesNeitherLocksOutAnHonestPeerNorFloodsTheLog()
        async throws
    {
        let lines = LineCounter()
        var configuration = Self.configuration
        configuration.handshakeTimeout = .seconds(60)  // only eviction frees a slot here
        let b = try await TCPNode.start(
            security: NoiseLinkSecurity(identity: .generate()),
            configuration: configuration,
            tcp: .init(listen: ["127.0.0.1:0"]),
            logger: lines.logger("b")
        )
        let address = try b.address
        let flood = IdleFlood(port: try TCPAddress(address).port, connections: 300)
        flood.start()
        // The flood is on: it filled the budget, was dropped and came back.
        _ = try await eventuallyValue("the flood to be evicted and re-opened", seconds: 30) {
            flood.dropped.load(ordering: .relaxed) >= 300 ? true : nil
        }

        let a = try await TCPNode.start(
            security: NoiseLinkSecurity(identity: .generate()),
            configuration: configuration,
            tcp: .init(listen: []),
            logger: Logger(label: "a") { _ in SwiftLogNoOpLogHandler() }
        )
        let bID = b.router.localPeerID
        let aID = a.router.localPeerID
        await a.router.connect(to: PeerHint(transport: "tcp", address: address, peerID: bID))
        // Messages both ways, while the flood goes on.
        try await within(seconds: 60, "an honest exchange during the flood") {
            for round in 0..<5 {
                try await Self.sendUntilAcknowledged(from: a.router, to: bID, [UInt8(round)])
                await Self.receive([UInt8(round)], at: b.router)
                try await Self.sendUntilAcknowledged(from: b.router, to: aID, [UInt8(100 + round)])
                await Self.receive([UInt8(100 + round)], at: a.router)
            }
        }
        let droppedDuring = flood.dropped.load(ordering: .relaxed)
        await flood.stop()

        let stats = await b.router.stats()
        let counters = b.transport.counters
        let logged = lines.count
        // Figures for the record (the test asserts behaviour, not speed).
        print(
            "idle flood: \(flood.opened.load(ordering: .relaxed)) connections opened, \(droppedDuring) dropped, "
                + "\(stats.unauthenticatedLinksEvicted) evicted, \(stats.handshakeFailures) handshake failures, "
                + "tcp counters \(counters), \(logged) log lines"
        )
        #expect(stats.unauthenticatedLinksEvicted >= 300 - configuration.maxUnauthenticatedLinks)
        #expect(logged <= 60, "the flood made the node log \(logged) lines: \(lines.sample)")
        await a.stop()
        await b.stop()
    }

    /// A peer that completes its handshake and then never reads: once our writes to it
    /// back up, the link is dropped after `link_write_stall_timeout_ms` and the send
    /// returns instead of hanging.
    @Test(.timeLimit(.minutes(3))) func aPeerThatNeverReadsIsDroppedAndTheSendReturns() async throws {
        var configuration = Self.configuration
        configuration.linkWriteStallTimeout = .seconds(1)
        let node = try await TCPNode.start(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            tcp: .init(listen: ["127.0.0.1:0"]),
            logger: Logger(label: "node") { _ in SwiftLogNoOpLogHandler() }
        )
        let events = await node.router.events()
        let deafID = PeerID.random()
        // A small receive buffer, so the kernel takes little before our writes wait.
        let deaf = try RawTCPClient(port: try TCPAddress(try node.address).port, receiveBuffer: 4096)
        let hello = [0xC0] + Array("SCM0".utf8) + [Frame.version] + deafID.bytes
        try deaf.write([UInt8(hello.count >> 8), UInt8(hello.count & 0xFF)] + hello)
        // It never reads a byte from here on.
        var iterator = events.makeAsyncIterator()
        while let event = await iterator.next(), !(event.kind == .linkUp && event.peer == deafID) {}
        let send = Task {
            // 8 MiB: far more than the socket buffers and the link's write queue hold.
            _ = try? await node.router.send(to: deafID, payload: [UInt8](repeating: 0x5A, count: 8 << 20))
        }
        var reason: String?
        while let event = await iterator.next() {
            if event.kind == .linkDown && event.peer == deafID {
                reason = event.reason
                break
            }
        }
        #expect(reason?.contains("stopped reading") == true, "link ended: \(reason ?? "-")")
        try await within(seconds: 30, "the send to return") { await send.value }
        await node.stop()
    }

    /// Reads `router`'s inbox up to `payload`. A send retried after a failed attempt
    /// (see ``sendUntilAcknowledged(from:to:_:)``) may have arrived before: an earlier
    /// payload is skipped, anything else is an error.
    static func receive(_ payload: [UInt8], at router: Router) async {
        while let message = await router.incoming.receive() {
            if message.payload == payload { return }
            #expect(
                message.payload.count == 1 && message.payload[0] < payload[0],
                "unexpected message \(message.payload)"
            )
        }
    }

    /// Sends until the next hop acknowledged (a send may fail while the link comes up,
    /// or time out on a loaded machine after it was delivered).
    static func sendUntilAcknowledged(from router: Router, to peer: PeerID, _ payload: [UInt8]) async throws {
        while true {
            do {
                _ = try await router.send(to: peer, payload: payload)
                return
            } catch let error as MeshError where error.code == .noRoute || error.code == .deliveryFailed {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }
}
