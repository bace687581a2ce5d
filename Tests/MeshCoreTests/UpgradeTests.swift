import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing
import TransportLoopback

/// Address exchange and transport upgrade (docs/PROTOCOL.md §A.8): two routers first
/// linked over a slow transport (small MTU, low bitrate), both also listening on a
/// faster one that neither dials by itself. The address records they exchange make
/// them link over the fast one, and traffic moves up with nothing lost or repeated.
@Suite struct UpgradeTests {
    static func router(_ name: String, slow: LoopbackNetwork, fast: LoopbackNetwork) async -> Router {
        let id = PeerID.random()
        var logger = Logger(label: name)
        logger.logLevel = .warning
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: id),
            configuration: RouterConfiguration(
                reconnect: ReconnectConfiguration(
                    initialDelay: .milliseconds(20),
                    maxDelay: .milliseconds(200),
                    jitter: 0.2
                )
            ),
            sealer: StandInSealer(peer: id),
            receipts: TestReceiptSigner(peer: id),
            logger: logger
        )
        // A BLE-like link: 64-byte packets at 200 kbit/s; and a fast one. Neither
        // discovers: the slow link is dialled by hand, the fast one only through the
        // address records.
        await router.add(
            LoopbackTransport(
                name: "slow",
                address: name,
                network: slow,
                configuration: .init(mtu: 64, discovery: false, bitrate: 200_000)
            ),
            priority: 20
        )
        await router.add(
            LoopbackTransport(name: "fast", address: name, network: fast, configuration: .init(discovery: false)),
            priority: 10
        )
        return router
    }

    @Test(.timeLimit(.minutes(3))) func trafficMovesUpToTheFasterTransportWithNothingLostOrRepeated() async throws {
        let (slow, fast) = (LoopbackNetwork(), LoopbackNetwork())
        let a = await Self.router("A", slow: slow, fast: fast)
        let b = await Self.router("B", slow: slow, fast: fast)
        let received = Mutex<[MessageID]>([])
        let tasks = [
            Task { try? await a.run() }, Task { try? await b.run() },
            Task { while let message = await b.incoming.receive() { received.withLock { $0.append(message.id) } } },
        ]
        defer { for task in tasks { task.cancel() } }
        await a.connect(to: PeerHint(transport: "slow", address: "B"))
        try await SecureEventually.until("A links to B over the slow transport") {
            await a.peers().first?.links.isEmpty == false
        }
        let bID = b.localPeerID

        // Messages go out from the moment the slow link is up, while the upgrade happens.
        var sent: [MessageID] = []
        for index in 0..<300 {
            sent.append(
                try await a.send(
                    to: bID,
                    payload: Array("message \(index) ".utf8) + [UInt8](repeating: UInt8(index % 251), count: 200)
                )
            )
        }
        try await SecureEventually.until("A and B link over the fast transport too") {
            await a.peers().first?.links.contains { $0.transport == "fast" } == true
        }
        for index in 300..<400 {
            sent.append(try await a.send(to: bID, payload: Array("message \(index)".utf8)))
        }
        try await SecureEventually.until("every message is delivered") {
            var all = true
            for id in sent where await a.status(of: id)?.status != .delivered {
                all = false
                break
            }
            return all
        }
        // The fast link is preferred now, and carries traffic; the records were checked.
        // (On a loaded machine the 100 messages above can all leave before the ranking
        // moves, so one more goes once the fast link ranks first.)
        try await SecureEventually.until("the fast link ranks first among A's links to B") {
            await a.peers().first?.links.first?.transport == "fast"
        }
        let last = try await a.send(to: bID, payload: Array("after the upgrade".utf8))
        sent.append(last)
        try await SecureEventually.until("the last message is delivered") {
            await a.status(of: last)?.status == .delivered
        }
        let ids = received.withLock { $0 }
        #expect(ids.count == sent.count, "\(ids.count) deliveries for \(sent.count) messages")
        #expect(Set(ids) == Set(sent))
        #expect(await b.stats().messagesReceived == sent.count)
        let statsA = await a.stats()
        let statsB = await b.stats()
        #expect((statsA.transports["fast"]?.framesSent ?? 0) > 0)
        #expect(statsA.addressRecordsAccepted >= 1 && statsB.addressRecordsAccepted >= 1)
        #expect(statsA.upgradeDials + statsB.upgradeDials >= 1)
        #expect(statsA.addressRecordsRejected.isEmpty && statsB.addressRecordsRejected.isEmpty)
        for router in [a, b] { await router.shutdown() }
    }

    @Test func addressRecordsRoundTripAndRejectMalformedInput() throws {
        let peer = PeerID.random()
        let signer = TestReceiptSigner(peer: peer)
        let record = AddressesFrame.originate(
            peer: peer,
            sequence: 42,
            entries: [
                .init(transport: "tcp", address: "192.0.2.7:7420"),
                .init(transport: "ble", address: "C0:FF:EE:00:00:01"),
                .init(transport: "", address: "dropped: empty transport name"),
            ],
            signer: signer
        )
        #expect(record.entries.count == 2)
        #expect(record.verify(with: signer))
        let bytes = Frame.addresses(record).encoded()
        #expect(try Frame.decode(bytes) == .addresses(record))
        // Every truncation and one trailing byte are malformed, never a trap.
        for length in 0..<bytes.count {
            #expect(throws: MeshError.self) { try Frame.decode(Array(bytes.prefix(length))) }
        }
        #expect(throws: MeshError.self) { try Frame.decode(bytes + [0]) }
        // Altered: an entry's address changed, so the signature no longer verifies.
        var altered = record
        altered.entries[0].address = "203.0.113.9:7420"
        #expect(!altered.verify(with: signer))
        // Too many entries on the wire.
        var tooMany = bytes
        tooMany[4 + 32 + 8] = UInt8(AddressesFrame.maxEntries + 1)
        #expect(throws: MeshError.self) { try Frame.decode(tooMany) }
    }
}

/// Polls `condition` every 10 ms, for at most 30 s (a bound, not a measured time).
enum SecureEventually {
    static func until(_ what: String, _ condition: () async -> Bool) async throws {
        for _ in 0..<3000 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting until \(what)")
        throw CancellationError()
    }
}
