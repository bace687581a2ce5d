import Logging
import MeshCore
import MeshCrypto
import MeshTesting
import TransportLoopback
import TransportTCP

/// Messages and bytes per second through the router, next to the same medium used
/// without the router, measured in the same run.
enum RouterBench {
    /// A started pair of routers and a consumer on B that counts deliveries.
    struct Pair {
        let a: Router
        let b: Router
        let runs: [Task<Void, Never>]
        let delivered: Task<Int, Never>

        func stop() async {
            await a.shutdown()
            await b.shutdown()
            for run in runs { await run.value }
        }
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        return logger
    }

    static func pair(
        transports: (Router, Router) async throws -> Void,
        secure: Bool,
        expectMessages: Int
    ) async throws -> Pair {
        let a: Router
        let b: Router
        let configuration = RouterConfiguration(
            reconnect: ReconnectConfiguration(initialDelay: .milliseconds(20), maxDelay: .milliseconds(200)),
            windowPerLink: 512,
            inboxCapacity: 4096
        )
        if secure {
            let ia = NodeIdentity.generate()
            let ib = NodeIdentity.generate()
            a = Router(
                security: NoiseLinkSecurity(identity: ia),
                configuration: configuration,
                sealer: EnvelopeSealer(identity: ia),
                logger: quietLogger
            )
            b = Router(
                security: NoiseLinkSecurity(identity: ib),
                configuration: configuration,
                sealer: EnvelopeSealer(identity: ib),
                logger: quietLogger
            )
        } else {
            a = Router(
                security: PlaintextLinkSecurity(localPeerID: .random()),
                configuration: configuration,
                logger: quietLogger
            )
            b = Router(
                security: PlaintextLinkSecurity(localPeerID: .random()),
                configuration: configuration,
                logger: quietLogger
            )
        }
        try await transports(a, b)
        let runs: [Task<Void, Never>] = [Task { try? await a.run() }, Task { try? await b.run() }]
        let delivered = Task {
            var count = 0
            while count < expectMessages, await b.incoming.receive() != nil { count += 1 }
            return count
        }
        let peer = b.localPeerID
        for _ in 0..<3000 {
            if await a.peers().contains(where: { $0.peer == peer }) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        return Pair(a: a, b: b, runs: runs, delivered: delivered)
    }

    /// Sends `count` messages of `size` bytes with `window` in flight; returns seconds.
    static func blast(_ pair: Pair, count: Int, size: Int, window: Int) async throws -> Double {
        let peer = pair.b.localPeerID
        let payload = [UInt8](repeating: 0xAB, count: size)
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            while next < min(window, count) {
                group.addTask { try await pair.a.send(to: peer, payload: payload, waitUntil: .delivered) }
                next += 1
            }
            while try await group.next() != nil {
                if next < count {
                    group.addTask { try await pair.a.send(to: peer, payload: payload, waitUntil: .delivered) }
                    next += 1
                }
            }
        }
        let delivered = await pair.delivered.value
        guard delivered == count else {
            throw MeshError(.deliveryFailed, "benchmark lost messages: \(delivered) of \(count) delivered")
        }
        return TCPBench.seconds(ContinuousClock.now - start)
    }

    /// Frames per second over a raw loopback link (no router): the baseline.
    static func rawLoopback(count: Int, size: Int, mtu: Int) async throws -> Double {
        let network = LoopbackNetwork()
        let x = LoopbackTransport(address: "x", network: network, configuration: .init(mtu: mtu, discovery: false))
        let y = LoopbackTransport(address: "y", network: network, configuration: .init(mtu: mtu, discovery: false))
        let runningX = try await RunningTransport.start(x, logger: quietLogger)
        let runningY = try await RunningTransport.start(y, logger: quietLogger)
        let accepted = Task { () -> (any Link)? in
            for await event in runningY.events { if case .inboundLink(let link) = event { return link } }
            return nil
        }
        let link = try await x.dial(y.hint)
        guard let remote = await accepted.value else { throw MeshError(.dialFailed, "no inbound link") }
        let packets = try PacketFramer.packets(for: [UInt8](repeating: 1, count: size), mtu: mtu)
        let start = ContinuousClock.now
        let reader = Task {
            for _ in 0..<(count * packets.count) { _ = try await remote.receive() }
        }
        for _ in 0..<count {
            for packet in packets { try await link.send(packet) }
        }
        try await reader.value
        let seconds = TCPBench.seconds(ContinuousClock.now - start)
        await runningX.stop()
        await runningY.stop()
        return seconds
    }

    static func loopbackPair(mtu: Int, secure: Bool, expect: Int) async throws -> Pair {
        let network = LoopbackNetwork()
        return try await pair(
            transports: { a, b in
                await a.add(
                    LoopbackTransport(
                        address: "a",
                        network: network,
                        configuration: .init(mtu: mtu, bufferFrames: 256)
                    ),
                    priority: 10
                )
                await b.add(
                    LoopbackTransport(
                        address: "b",
                        network: network,
                        configuration: .init(mtu: mtu, bufferFrames: 256)
                    ),
                    priority: 10
                )
            },
            secure: secure,
            expectMessages: expect
        )
    }

    /// Router figures over LoopbackTransport: 64 B msgs/s and 64 KiB MB/s on one link
    /// (MTU 65,535), and MB/s with fragmentation (MTU 1,024 and 23).
    static func run() async throws -> [BenchFigure] {
        var figures: [BenchFigure] = []
        // 64-byte messages, single link.
        let small = 50_000
        let rawSmall = try await rawLoopback(count: small, size: 64 + 105, mtu: 65_535)
        let p1 = try await loopbackPair(mtu: 65_535, secure: false, expect: small)
        let routerSmall = try await blast(p1, count: small, size: 64, window: 256)
        await p1.stop()
        figures.append(
            BenchFigure(
                name: "router 64 B messages, loopback link",
                value: Double(small) / routerSmall,
                unit: "msgs/s",
                baseline: ("raw loopback link frames", Double(small) / rawSmall)
            )
        )
        // Bulk, single link.
        let bulkCount = 800
        let bulkSize = 64_000
        let rawBulk = try await rawLoopback(count: bulkCount, size: bulkSize + 105, mtu: 65_535)
        let p2 = try await loopbackPair(mtu: 65_535, secure: false, expect: bulkCount)
        let routerBulk = try await blast(p2, count: bulkCount, size: bulkSize, window: 64)
        await p2.stop()
        let mb = Double(bulkCount * bulkSize) / 1e6
        figures.append(
            BenchFigure(
                name: "router 64 KB messages, loopback link",
                value: mb / routerBulk,
                unit: "MB/s",
                baseline: ("raw loopback link", mb / rawBulk)
            )
        )
        // Fragmentation.
        for (mtu, count) in [(1024, 200), (23, 20)] {
            let rawFrag = try await rawLoopback(count: count, size: bulkSize + 105, mtu: mtu)
            let p = try await loopbackPair(mtu: mtu, secure: false, expect: count)
            let seconds = try await blast(p, count: count, size: bulkSize, window: 16)
            await p.stop()
            let megabytes = Double(count * bulkSize) / 1e6
            figures.append(
                BenchFigure(
                    name: "router 64 KB messages fragmented to MTU \(mtu)",
                    value: megabytes / seconds,
                    unit: "MB/s",
                    baseline: ("raw loopback packets at MTU \(mtu)", megabytes / rawFrag)
                )
            )
        }
        return figures
    }

    static func tcpPair(expect: Int) async throws -> (Pair, [TCPTransport]) {
        let server = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"]))
        let client = TCPTransport(configuration: .init(listen: []))
        let pair = try await pair(
            transports: { a, b in
                await a.add(client, priority: 30)
                await b.add(server, priority: 30)
            },
            secure: true,
            expectMessages: expect
        )
        // The server's port is known once it listens: point A at it.
        var address: String?
        for _ in 0..<1000 {
            address = await pair.b.transportStatus().first?.addresses.first
            if address != nil { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        guard let address else { throw MeshError(.transportUnavailable, "server did not bind") }
        await pair.a.connect(to: PeerHint(transport: "tcp", address: address, peerID: pair.b.localPeerID))
        for _ in 0..<2000 {
            if await pair.a.peers().contains(where: { $0.peer == pair.b.localPeerID }) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        return (pair, [server, client])
    }

    /// The full stack on TCP loopback (Noise XX, envelopes, router, acks) next to raw
    /// TCP in the same run: bulk MB/s, 64 B msgs/s, round trip p50/p99, link set-up.
    /// Full stack over TCP (Noise, router, acks), 256 MiB in 64 KiB messages: MB/s.
    static func fullStackBulk() async throws -> Double {
        let bulkCount = 4096  // 256 MiB in 64 KiB messages
        let (pair, _) = try await tcpPair(expect: bulkCount)
        let seconds = try await blast(pair, count: bulkCount, size: 65_536, window: 64)
        await pair.stop()
        return Double(bulkCount * 65_536) / 1e6 / seconds
    }

    /// Figure names the goal lines pick by.
    static let fullStackSmallName = "full stack TCP 64 B messages, zero loss"
    static let fullStackRTT50Name = "full stack TCP 64 B round trip p50"

    static func fullStackTCP(raw: [BenchFigure], links: [BenchFigure]) async throws -> [BenchFigure] {
        func baseline(_ name: String) -> (name: String, value: Double)? {
            (raw + links).first { $0.name == name }.map { (name: $0.name, value: $0.value) }
        }
        var figures: [BenchFigure] = []
        figures.append(
            BenchFigure(
                name: "full stack TCP bulk 256 MiB (Noise+router, direct: no envelope)",
                value: try await fullStackBulk(),
                unit: "MB/s",
                baseline: baseline(TCPBench.rawBulkName)
            )
        )
        let small = 100_000
        let (p2, _) = try await tcpPair(expect: small)
        let smallSeconds = try await blast(p2, count: small, size: 64, window: 512)
        await p2.stop()
        figures.append(
            BenchFigure(
                name: fullStackSmallName,
                value: Double(small) / smallSeconds,
                unit: "msgs/s",
                baseline: baseline("TCPTransport link 64 B frames one way")
            )
        )
        // Round trip: A sends, B echoes, A waits.
        let rounds = 2000
        let (p3, _) = try await tcpPair(expect: 0)
        _ = await p3.delivered.value
        let echo = Task {
            while let message = await p3.b.incoming.receive() {
                _ = try? await p3.b.send(to: message.from, payload: message.payload, waitUntil: .delivered)
            }
        }
        var samples: [Double] = []
        let payload = [UInt8](repeating: 7, count: 64)
        for round in 0..<(rounds + 200) {
            let start = ContinuousClock.now
            try await p3.a.send(to: p3.b.localPeerID, payload: payload, waitUntil: .delivered)
            _ = await p3.a.incoming.receive()
            if round >= 200 { samples.append(TCPBench.microseconds(ContinuousClock.now - start)) }
        }
        await p3.stop()
        echo.cancel()
        figures.append(
            BenchFigure(
                name: fullStackRTT50Name,
                value: TCPBench.percentile(samples, 0.5),
                unit: "µs",
                baseline: baseline(TCPBench.rawRTT50Name)
            )
        )
        figures.append(
            BenchFigure(
                name: "full stack TCP 64 B round trip p99",
                value: TCPBench.percentile(samples, 0.99),
                unit: "µs",
                baseline: baseline(TCPBench.rawRTT99Name)
            )
        )
        // Link set-up: TCP connect + Noise XX, measured with the link handshake alone.
        var setups: [Double] = []
        let server = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"]))
        let client = TCPTransport(configuration: .init(listen: []))
        let runningServer = try await RunningTransport.start(server, logger: quietLogger)
        let runningClient = try await RunningTransport.start(client, logger: quietLogger)
        let serverSecurity = NoiseLinkSecurity(identity: .generate())
        let clientSecurity = NoiseLinkSecurity(identity: .generate())
        let accepter = Task {
            for await event in runningServer.events {
                guard case .inboundLink(let link) = event else { continue }
                _ = try? await serverSecurity.handshake(
                    role: .responder,
                    channel: BenchChannel(link: link),
                    context: .init(transportName: "tcp", remoteAddress: "")
                )
                await link.close()
            }
        }
        let hint = PeerHint(transport: "tcp", address: runningServer.addresses[0])
        for round in 0..<220 {
            let start = ContinuousClock.now
            let link = try await client.dial(hint)
            _ = try await clientSecurity.handshake(
                role: .initiator,
                channel: BenchChannel(link: link),
                context: .init(transportName: "tcp", remoteAddress: hint.address)
            )
            if round >= 20 { setups.append(TCPBench.microseconds(ContinuousClock.now - start) / 1000) }
            await link.close()
        }
        await runningClient.stop()
        await runningServer.stop()
        accepter.cancel()
        figures.append(
            BenchFigure(
                name: "link set-up (TCP connect + Noise XX) median",
                value: TCPBench.percentile(setups, 0.5),
                unit: "ms"
            )
        )
        return figures
    }
}

/// Handshake messages straight over a link (each fits one TCP frame).
struct BenchChannel: HandshakeChannel {
    let link: any Link
    func send(_ message: [UInt8]) async throws {
        for packet in try PacketFramer.packets(for: message, mtu: link.mtu) { try await link.send(packet) }
    }
    func receive() async throws -> [UInt8] {
        var reassembler = PacketReassembler()
        while let packet = try await link.receive() {
            if case .segment(let segment) = try reassembler.feed(packet) { return segment }
        }
        throw MeshError(.linkClosed, "closed during handshake")
    }
}
