import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Two routers joined by loopback transports, with inbox collectors.
final class RouterPair: Sendable {
    let network = LoopbackNetwork()
    let a: Router
    let b: Router
    let received = Mutex<[InboundMessage]>([])
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(
        transports: [(name: String, priority: Int, configuration: LoopbackTransport.Configuration)],
        configuration: RouterConfiguration
    ) async {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            logger: logger
        )
        b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: configuration,
            logger: logger
        )
        for (name, priority, transportConfiguration) in transports {
            await a.add(
                LoopbackTransport(name: name, address: "A", network: network, configuration: transportConfiguration),
                priority: priority
            )
            await b.add(
                LoopbackTransport(name: name, address: "B", network: network, configuration: transportConfiguration),
                priority: priority
            )
        }
        let (a, b) = (a, b)
        tasks.withLock {
            $0.append(Task { try? await a.run() })
            $0.append(Task { try? await b.run() })
            $0.append(
                Task { [self] in
                    while let message = await b.incoming.receive() {
                        self.received.withLock { $0.append(message) }
                    }
                }
            )
        }
    }

    /// Waits until A has a live link to B on each named transport.
    func waitForLinks(_ names: Set<String>) async throws {
        for _ in 0..<2000 {
            let live = Set(await a.peers().first { $0.peer == b.localPeerID }?.links.map(\.transport) ?? [])
            if names.isSubset(of: live) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("links \(names) to B never came up")
        throw CancellationError()
    }

    func waitForReceived(_ count: Int) async throws {
        for _ in 0..<3000 {
            if received.withLock({ $0.count }) >= count { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("B received only \(received.withLock { $0.count }) of \(count) messages")
        throw CancellationError()
    }

    func stop() async {
        await a.shutdown()
        await b.shutdown()
        for task in tasks.withLock({ $0 }) { await task.value }
    }
}

@Suite struct RouterTests {
    static let testConfiguration = RouterConfiguration(
        escalation: EscalationConfiguration(
            ackTimeoutMin: .milliseconds(500),
            ackTimeoutMax: .seconds(5),
            maxAttempts: 4
        ),
        reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
        keepaliveInterval: .seconds(2)
    )

    /// Sends payloads `range` from A to B with `concurrency` messages in flight.
    static func sendAll(_ pair: RouterPair, _ range: Range<Int>, concurrency: Int = 32) async throws {
        let peer = pair.b.localPeerID
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = range.lowerBound
            func add() {
                let index = next
                next += 1
                group.addTask {
                    var payload = [UInt8](repeating: 0, count: 64)
                    withUnsafeBytes(of: UInt32(index).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
                    try await pair.a.send(to: peer, payload: payload, waitUntil: .delivered)
                }
            }
            while next < min(range.upperBound, range.lowerBound + concurrency) { add() }
            while try await group.next() != nil {
                if next < range.upperBound { add() }
            }
        }
    }

    @Test func failoverLosesNothingDuplicatesNothingAndMovesBack() async throws {
        let pair = await RouterPair(
            transports: [("lo10", 10, .init()), ("lo20", 20, .init()), ("lo30", 30, .init())],
            configuration: Self.testConfiguration
        )
        let events = await pair.a.events()
        let seen = Mutex<[RouterEvent]>([])
        let watcher = Task {
            for await event in events { seen.withLock { $0.append(event) } }
        }
        try await pair.waitForLinks(["lo10", "lo20", "lo30"])

        // Phase 1: kill the priority-10 link while 5,000 messages stream.
        let killer = Task {
            try await pair.waitForReceived(2_500)
            pair.network.partition("A", "B", transport: "lo10")
        }
        try await Self.sendAll(pair, 0..<5_000)
        try await killer.value
        let afterKill = await pair.a.stats()
        #expect(afterKill.escalations >= 1)
        #expect(afterKill.transports["lo20"]?.framesSent ?? 0 > 0)
        #expect(await pair.a.peers().first?.activeTransport == "lo20")

        // Phase 2: heal; traffic returns to priority 10.
        pair.network.heal("A", "B", transport: "lo10")
        try await pair.waitForLinks(["lo10"])
        try await Self.sendAll(pair, 5_000..<10_000)
        try await pair.waitForReceived(10_000)

        let stats = await pair.a.stats()
        #expect(stats.deEscalations >= 1)
        #expect(stats.messagesSent == 10_000)
        #expect(await pair.a.peers().first?.activeTransport == "lo10")

        let messages = pair.received.withLock { $0 }
        let indices = messages.map {
            Int($0.payload[0]) << 24 | Int($0.payload[1]) << 16 | Int($0.payload[2]) << 8 | Int($0.payload[3])
        }
        #expect(messages.count == 10_000, "duplicates or losses: \(messages.count) delivered")
        #expect(Set(indices) == Set(0..<10_000))
        #expect(Set(messages.map(\.id)).count == 10_000)

        let log = seen.withLock { $0 }
        #expect(log.contains { $0.kind == .escalated && $0.from == "lo10" && $0.to == "lo20" })
        #expect(log.contains { $0.kind == .deEscalated && $0.from == "lo20" && $0.to == "lo10" })
        watcher.cancel()
        await pair.stop()
    }

    @Test func oneMebibyteOverA23ByteMTU() async throws {
        var configuration = Self.testConfiguration
        configuration.escalation.ackTimeoutMin = .seconds(2)
        configuration.escalation.ackTimeoutMax = .seconds(20)
        let pair = await RouterPair(transports: [("ble-like", 20, .init(mtu: 23))], configuration: configuration)
        try await pair.waitForLinks(["ble-like"])
        var rng = SystemRandomNumberGenerator()
        let payload = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        try await pair.a.send(to: pair.b.localPeerID, payload: payload, waitUntil: .delivered)
        try await pair.waitForReceived(1)
        let got = pair.received.withLock { $0.first?.payload } ?? []
        #expect(got.count == payload.count)
        let firstDifference = zip(got, payload).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstDifference == nil, "payload differs from byte \(firstDifference ?? -1)")
        await pair.stop()
    }

    /// Store and forward: a send with no route is queued (not refused) and goes out
    /// when a link comes up; relay off and oversize messages are refused up front.
    @Test func sendWithoutRouteQueuesAndRelayOffOrOversizeFailsClearly() async throws {
        let router = Router(security: PlaintextLinkSecurity(localPeerID: .random()), logger: Logger(label: "t"))
        let absent = PeerID.random()
        let id = try await router.send(to: absent, payload: [1])
        #expect(await router.status(of: id)?.status == .queued)
        // Waiting with a timeout says it is still queued; the message stays.
        let wait = await #expect(throws: MeshError.self) {
            try await router.waitForStatus(of: id, until: .delivered, timeout: .milliseconds(1))
        }
        #expect(wait?.code == .timedOut)
        #expect(wait?.message.contains(id.hex) == true)
        #expect(await router.status(of: id)?.status == .queued)
        // The same ID again is the same message (a retry makes no duplicate); for
        // another peer it is refused.
        #expect(try await router.send(to: absent, payload: [1], options: SendOptions(id: id)) == id)
        let reused = await #expect(throws: MeshError.self) {
            try await router.send(to: .random(), payload: [1], options: SendOptions(id: id))
        }
        #expect(reused?.code == .invalidArgument)
        let unknown = await #expect(throws: MeshError.self) {
            try await router.waitForStatus(of: .random(), until: .sent, timeout: .seconds(1))
        }
        #expect(unknown?.code == .unknownMessage)
        let off = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: RouterConfiguration(relayEnabled: false),
            logger: Logger(label: "t")
        )
        let offError = await #expect(throws: MeshError.self) { try await off.send(to: .random(), payload: [1]) }
        #expect(offError?.code == .relayDisabled)
        let big = await #expect(throws: MeshError.self) {
            try await router.send(
                to: .random(),
                payload: [UInt8](repeating: 0, count: Frame.defaultMaxMessageLength + 1)
            )
        }
        #expect(big?.code == .messageTooLarge)
    }

    /// Messages queued while the destination is away go out, in order and once each,
    /// when a link to it comes up.
    @Test(.timeLimit(.minutes(3))) func messagesQueuedWithoutARouteAreDeliveredWhenALinkComesUp() async throws {
        let network = LoopbackNetwork()
        var logger = Logger(label: "t")
        logger.logLevel = .warning
        let a = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: Self.testConfiguration,
            logger: logger
        )
        let b = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: Self.testConfiguration,
            logger: logger
        )
        await a.add(
            LoopbackTransport(name: "lo", address: "A", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let runA = Task { try? await a.run() }
        var ids: [MessageID] = []
        for value in UInt8(0)..<50 { ids.append(try await a.send(to: b.localPeerID, payload: [value])) }
        for id in ids { #expect(await a.status(of: id)?.status == .queued) }
        // B appears; A learns where it is.
        await b.add(
            LoopbackTransport(name: "lo", address: "B", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let runB = Task { try? await b.run() }
        await a.connect(to: PeerHint(transport: "lo", address: "B", peerID: b.localPeerID))
        var got: [UInt8] = []
        while got.count < 50, let message = await b.incoming.receive() { got.append(contentsOf: message.payload) }
        #expect(got.sorted() == Array(0..<50))
        for id in ids {
            #expect(try await a.waitForStatus(of: id, until: .delivered, timeout: .seconds(30)).status == .delivered)
        }
        #expect(b.incoming.count == 0)
        await a.shutdown()
        await b.shutdown()
        await runA.value
        await runB.value
    }

    /// A hostile peer that completes the handshake and then sends garbage is cut off;
    /// the router keeps serving a well-behaved peer at the same time.
    @Test func malformedFramesCloseTheLinkAndOthersCarryOn() async throws {
        let pair = await RouterPair(transports: [("lo", 10, .init())], configuration: Self.testConfiguration)
        try await pair.waitForLinks(["lo"])
        let hostile = LoopbackTransport(
            name: "lo",
            address: "H",
            network: pair.network,
            configuration: .init(discovery: false)
        )
        let hostileID = PeerID.random()
        let running = try await RunningTransport.start(hostile, localPeerID: hostileID)
        // A PING without its nonce (a known type, malformed: an unassigned type would be
        // ignored, docs/PROTOCOL.md §A.11), a bad packet, a bad flag.
        for garbage: [UInt8] in [[0xC0, 0x01, 0x03, 0, 0], [0xC0, 0x09, 0x09], [0x77]] {
            let link = try await hostile.dial(PeerHint(transport: "lo", address: "B"))
            let hello: [UInt8] = Array("SCM0".utf8) + [Frame.version] + hostileID.bytes
            try await link.send([0xC0] + hello)
            _ = try await link.receive()  // B's hello
            try await link.send(garbage)
            // B closes the link: our receive ends.
            while (try? await link.receive()) != nil {}
        }
        try await Self.sendAll(pair, 0..<100)
        try await pair.waitForReceived(100)
        let stats = await pair.b.stats()
        #expect(stats.malformedInputs.values.reduce(0, +) == 3)
        await running.stop()
        await pair.stop()
    }

    /// An authenticated peer cannot slip in an unsealed message claiming another
    /// origin: it is acknowledged (it arrived) but never delivered.
    @Test func unsealedMessageClaimingAnotherOriginIsDropped() async throws {
        let pair = await RouterPair(transports: [("lo", 10, .init())], configuration: Self.testConfiguration)
        try await pair.waitForLinks(["lo"])
        let hostile = LoopbackTransport(
            name: "lo",
            address: "H",
            network: pair.network,
            configuration: .init(discovery: false)
        )
        let hostileID = PeerID.random()
        let running = try await RunningTransport.start(hostile, localPeerID: hostileID)
        let link = try await hostile.dial(PeerHint(transport: "lo", address: "B"))
        try await link.send([0xC0] + Array("SCM0".utf8) + [Frame.version] + hostileID.bytes)
        _ = try await link.receive()
        let spoofed = DataFrame(
            sequence: 1,
            messageID: .random(),
            origin: pair.a.localPeerID,
            destination: pair.b.localPeerID,
            ttl: 7,
            chunkIndex: 0,
            chunkCount: 1,
            messageLength: 3,
            payload: [6, 6, 6]
        )
        try await link.send([0xC0] + Frame.data(spoofed).encoded())
        // The hop is acknowledged...
        var acked = false
        while let packet = try await link.receive() {
            if case .ack(let ack) = try Frame.decode(Array(packet.dropFirst())), ack.cumulative == 1 {
                acked = true
                break
            }
        }
        #expect(acked)
        // ...but nothing is delivered, and real traffic still flows.
        try await Self.sendAll(pair, 0..<10)
        try await pair.waitForReceived(10)
        #expect(pair.received.withLock { $0.allSatisfy { $0.payload != [6, 6, 6] } })
        #expect(await pair.b.stats().sealedMessagesRejected["unsealedFromThirdParty"] == 1)
        await running.stop()
        await pair.stop()
    }

    @Test func impostorWithWrongExpectedPeerIsRefused() async throws {
        let network = LoopbackNetwork()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: Self.testConfiguration,
            logger: Logger(label: "t")
        )
        await router.add(
            LoopbackTransport(name: "lo", address: "R", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let other = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            configuration: Self.testConfiguration,
            logger: Logger(label: "t")
        )
        await other.add(
            LoopbackTransport(name: "lo", address: "O", network: network, configuration: .init(discovery: false)),
            priority: 10
        )
        let events = await router.events()
        let runA = Task { try? await router.run() }
        let runB = Task { try? await other.run() }
        // Ask for a link to O claiming to be some other peer.
        await router.connect(to: PeerHint(transport: "lo", address: "O", peerID: .random()))
        for await event in events {
            if event.kind == .handshakeFailed { break }
        }
        #expect(await router.peers().isEmpty)
        #expect(await router.stats().handshakeFailures >= 1)
        await router.shutdown()
        await other.shutdown()
        _ = await (runA.value, runB.value)
    }
}
