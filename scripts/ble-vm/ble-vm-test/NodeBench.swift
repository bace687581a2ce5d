// ble-vm-test node-echo / node-bench: two routers with a node's stack (Noise XX links,
// sealed envelopes, signed delivery receipts, hop acks; no store, no control socket), each
// on one controller with BLETransport as its only transport. --executor pool|reactor sets
// transports.ble.link_executor, i.e. whether the router runs each link's tasks (handshake,
// reader, ack writer, ticker) on Swift's global pool or on the BLE reactor thread.
//
//   ble-vm-test node-echo --adapter hci0 --executor reactor    sends every message back to its origin
//   ble-vm-test node-bench --adapter hci1 --executor reactor --rtt N --bulk BYTES
//       round trip: N × a 64-byte message to the echo node, the next sent when its echo came;
//       bulk: BYTES in 4000-byte messages, 8 in flight, until every echo came back.
import Logging
import MeshCore
import MeshCrypto
import TransportBLE

#if canImport(Glibc)
import Glibc
#endif

enum NodeBench {
    /// Size of a bulk message (6–7 packets at the 672-byte L2CAP MTU).
    static let bulkMessage = 4000
    /// Bulk messages sent and not yet echoed.
    static let bulkWindow = 8

    /// A router like a node's, with BLE on `options.adapter` as its only transport.
    static func makeRouter(_ options: Options) async -> Router {
        var logger = Logger(label: "node")
        logger.logLevel = .warning
        var configuration = BLETransport.Configuration()
        configuration.adapter = options.adapter
        configuration.psm = options.psm
        guard let path = BLETransport.Configuration.DataPath(rawValue: options.dataPath) else { fatal("--data-path \(options.dataPath)") }
        configuration.dataPath = path
        configuration.advertisingIntervalMs = 30
        configuration.scanIntervalMs = 30
        configuration.scanWindowMs = 30
        guard let executor = BLETransport.Configuration.LinkExecutor(rawValue: options.executor) else {
            fatal("--executor \(options.executor): node modes take pool or reactor")
        }
        configuration.linkExecutor = executor
        configuration.gattWriteWindow = options.gattWindow
        let identity = NodeIdentity.generate()
        let router = Router(
            security: NoiseLinkSecurity(identity: identity), sealer: EnvelopeSealer(identity: identity),
            receipts: IdentityReceiptSigner(identity: identity), logger: logger)
        await router.add(BLETransport(configuration: configuration), priority: 20)
        return router
    }

    static func run(_ options: Options) async -> Never {
        let router = await makeRouter(options)
        let running = Task { try await router.run() }
        say("\(options.mode): node \(router.localPeerID) on \(options.adapter), link_executor \(options.executor)")
        if options.mode == "node-echo" {
            while let message = await router.incoming.receive() {
                do {
                    try await router.send(to: message.from, payload: message.payload)
                } catch {
                    fatal("node-echo: sending back to \(message.from): \(error)")
                }
            }
            fatal("node-echo: the router stopped")
        }
        do {
            try await withDeadline(options.timeout + 240, "node-bench") { try await bench(router, options) }
        } catch {
            fatal("node-bench: \(error)")
        }
        await router.shutdown()
        _ = await running.result
        exit(0)
    }

    /// Waits for the echo node's link, then measures round trips and bulk.
    static func bench(_ router: Router, _ options: Options) async throws {
        let start = ContinuousClock.now
        let deadline = start + .seconds(options.timeout)
        var peer: PeerSnapshot?
        while peer == nil {
            peer = await router.peers().first { !$0.links.isEmpty }
            if peer == nil {
                guard ContinuousClock.now < deadline else { fatal("node-bench: no link to a node within \(options.timeout) s") }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        guard let peer, let link = peer.links.first else { fatal("node-bench: no link") }
        say("node-bench: link to \(peer.peer) over \(link.transport) (\(link.address)) after \(start.duration(to: .now))")
        let target = peer.peer
        // Warm-up: the first messages also settle routes and the receipt path.
        for index in 0..<5 { try await roundTrip(router, to: target, index: UInt32(index)) }
        var samples: [Duration] = []
        samples.reserveCapacity(options.rtts)
        for index in 0..<options.rtts {
            let sent = ContinuousClock.now
            try await roundTrip(router, to: target, index: UInt32(1000 + index))
            samples.append(sent.duration(to: .now))
        }
        let total = samples.reduce(Duration.zero, +)
        samples.sort()
        let median = samples.isEmpty ? .zero : samples[samples.count / 2]
        say("bench: round 1 rtt count=\(options.rtts) size=64 mean=\(ms(total / max(1, options.rtts))) ms min=\(ms(samples.first ?? .zero)) ms median=\(ms(median)) ms")
        let messages = max(1, (options.bulk + bulkMessage - 1) / bulkMessage)
        let bulkStart = ContinuousClock.now
        var sent = 0
        var echoed = 0
        var bytes = 0
        while echoed < messages {
            while sent < messages && sent - echoed < bulkWindow {
                var payload = [UInt8](repeating: 0x5A, count: bulkMessage)
                withUnsafeBytes(of: UInt32(sent).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
                try await router.send(to: target, payload: payload)
                sent += 1
            }
            guard let echo = await router.incoming.receive() else { fatal("node-bench: the router stopped during bulk") }
            guard echo.payload.count == bulkMessage else { fatal("node-bench: a bulk echo of \(echo.payload.count) bytes") }
            echoed += 1
            bytes += echo.payload.count
        }
        let elapsed = bulkStart.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        say("bench: round 1 bulk bytes=\(bytes) messages=\(messages) size=\(bulkMessage) seconds=\(fixed(seconds, 3)) throughput=\(fixed(Double(bytes) / seconds / 1000, 1)) kB/s (echoed, payload each way)")
    }

    /// Sends one 64-byte message numbered `index` and waits for its echo.
    static func roundTrip(_ router: Router, to target: PeerID, index: UInt32) async throws {
        var payload = [UInt8](repeating: 0xA5, count: 64)
        withUnsafeBytes(of: index.bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
        try await router.send(to: target, payload: payload)
        guard let echo = await router.incoming.receive() else { fatal("node-bench: the router stopped") }
        guard echo.payload == payload else { fatal("node-bench: echo of message \(index) differs (\(echo.payload.count) bytes)") }
    }
}
