import Foundation
import Logging
import MeshCore
import MeshCrypto
import MeshStore
import Synchronization
import TransportLoopback

/// The cost of durability: queue-and-deliver throughput with the SQLite store
/// (StoreOutbox + StoreInbox, `synchronous = FULL`) next to the in-memory queue and
/// channel sink, same routers, same transport, same run. Both with Noise links and
/// signed delivery receipts, so "delivered" means the receipt came back.
enum StoreBench {
    /// Counts what reaches the sink and says when `target` arrived.
    final class CountingSink: MessageSink {
        let inner: any MessageSink
        let target: Int
        private let count = Atomic(0)
        let done: AsyncStream<Void>
        private let signal: AsyncStream<Void>.Continuation

        init(inner: any MessageSink, target: Int) {
            self.inner = inner
            self.target = target
            (done, signal) = AsyncStream.makeStream(of: Void.self)
        }

        func accept(_ message: InboundMessage) async throws {
            try await inner.accept(message)
            if count.add(1, ordering: .relaxed).newValue == target { signal.yield() }
        }

        func accept(
            _ message: InboundMessage,
            queueing receipt: OutboundMessage,
            in queue: any OutboundQueue
        ) async throws {
            try await inner.accept(message, queueing: receipt, in: queue)
            if count.add(1, ordering: .relaxed).newValue == target { signal.yield() }
        }
    }

    /// How many tasks send at once.
    static let senders = 16

    /// Queues `count` messages of `size` bytes from A to B (``senders`` tasks at once),
    /// then waits until B's sink took them all and A saw every receipt. Returns seconds
    /// from the first send.
    static func queueAndDeliver(durable: Bool, count: Int, size: Int) async throws -> Double {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storebench-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = StoreConfiguration()
        configuration.outboxMaxMessages = count * 2
        configuration.outboxMaxMessagesPerPeer = count * 2
        let stores =
            durable
            ? try [
                MeshStore(path: directory + "/a.sqlite", configuration: configuration),
                MeshStore(path: directory + "/b.sqlite", configuration: configuration),
            ]
            : []
        defer { for store in stores { try? store.close() } }

        let channel = BoundedChannel<InboundMessage>(capacity: 4096)
        let drain = Task { while await channel.receive() != nil {} }
        defer {
            channel.finish()
            drain.cancel()
        }
        let sinkB = CountingSink(inner: durable ? stores[1].inbox : ChannelSink(channel: channel), target: count)
        let routerConfiguration = RouterConfiguration(windowPerLink: 512, inboxCapacity: 4096)
        let ia = NodeIdentity.generate()
        let ib = NodeIdentity.generate()
        let a = Router(
            security: NoiseLinkSecurity(identity: ia),
            configuration: routerConfiguration,
            receipts: IdentityReceiptSigner(identity: ia),
            sink: durable ? stores[0].inbox : nil,
            queue: durable ? stores[0].outbox : nil,
            logger: RouterBench.quietLogger
        )
        let b = Router(
            security: NoiseLinkSecurity(identity: ib),
            configuration: routerConfiguration,
            receipts: IdentityReceiptSigner(identity: ib),
            sink: sinkB,
            queue: durable ? stores[1].outbox : nil,
            logger: RouterBench.quietLogger
        )
        let network = LoopbackNetwork()
        await a.add(
            LoopbackTransport(address: "a", network: network, configuration: .init(mtu: 65_535, bufferFrames: 256)),
            priority: 10
        )
        await b.add(
            LoopbackTransport(address: "b", network: network, configuration: .init(mtu: 65_535, bufferFrames: 256)),
            priority: 10
        )
        let runs = [Task { try? await a.run() }, Task { try? await b.run() }]
        for _ in 0..<3000 {
            if await a.peers().contains(where: { $0.peer == b.localPeerID }) { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        let payload = [UInt8](repeating: 0x5A, count: size)
        let start = ContinuousClock.now
        // Several senders at once, as a node's clients send: writes that wait at the same
        // moment share a commit. Each sender's sends follow one another.
        let destination = b.localPeerID
        let ids = try await withThrowingTaskGroup(of: [MessageID].self) { group in
            for sender in 0..<senders {
                group.addTask {
                    var ids: [MessageID] = []
                    for _ in stride(from: sender, to: count, by: senders) {
                        ids.append(try await a.send(to: destination, payload: payload))
                    }
                    return ids
                }
            }
            var all: [MessageID] = []
            for try await some in group { all += some }
            return all
        }
        for await _ in sinkB.done { break }
        for id in ids {
            let record = try await a.waitForStatus(of: id, until: .delivered, timeout: .seconds(120))
            guard record.status == .delivered else {
                throw MeshError(.deliveryFailed, "benchmark message \(id) ended \(record.status)")
            }
        }
        let seconds = TCPBench.seconds(ContinuousClock.now - start)
        if durable {
            let (sender, receiver) = (stores[0].commitCounts, stores[1].commitCounts)
            print(
                "  \(count) × \(size) B: sender \(sender.transactions) commits of \(sender.writes) writes, "
                    + "receiver \(receiver.transactions) commits of \(receiver.writes) writes "
                    + "(\(String(format: "%.2f", Double(sender.transactions + receiver.transactions) / Double(count))) commits per message)"
            )
        }
        await a.shutdown()
        await b.shutdown()
        for run in runs { await run.value }
        return seconds
    }

    /// The figure's name for messages of `size` bytes.
    static func name(size: Int) -> String {
        "queue-and-deliver \(size) B messages, \(senders) senders (receipt back), SQLite StoreOutbox + StoreInbox"
    }

    /// Figures: 64 B and 4 KiB messages queued and delivered (receipt back), SQLite
    /// store against the in-memory queue and channel sink.
    static func run() async throws -> [BenchFigure] {
        var figures: [BenchFigure] = []
        for (count, size) in [(2_000, 64), (1_000, 4_096)] {
            // Warm up once, then measure each backend.
            _ = try await queueAndDeliver(durable: false, count: 200, size: size)
            let memory = try await queueAndDeliver(durable: false, count: count, size: size)
            let durable = try await queueAndDeliver(durable: true, count: count, size: size)
            figures.append(
                BenchFigure(
                    name: name(size: size),
                    value: Double(count) / durable,
                    unit: "msgs/s",
                    baseline: ("InMemoryOutboundQueue + ChannelSink", Double(count) / memory)
                )
            )
        }
        return figures
    }
}
