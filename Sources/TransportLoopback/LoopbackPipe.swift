import MeshCore
import Synchronization

/// The two directions of one in-memory link.
final class LoopbackPipe: Sendable {
    let addressA: String
    let addressB: String
    let transportName: String
    let aToB: BoundedChannel<Packet>
    let bToA: BoundedChannel<Packet>
    let failed = Atomic<Bool>(false)
    /// Frames vanish in both directions while the link stays open (out of range).
    let silenced = Atomic<Bool>(false)
    /// End A (or B) stopped reading: its `receive` waits for the end of the link without
    /// taking frames, so the other end's sends fill the buffer and then wait.
    private let deaf = Atomic<UInt8>(0)  // bit 0: end A, bit 1: end B
    /// Finished when the link ends (closed at either end, or failed): wakes a deaf end.
    let endedForA = BoundedChannel<Void>(capacity: 1)
    let endedForB = BoundedChannel<Void>(capacity: 1)
    let network: LoopbackNetwork

    struct Packet: Sendable {
        var bytes: [UInt8]
        var deliverAt: ContinuousClock.Instant?
    }

    init(transportName: String, a: String, b: String, capacity: Int, network: LoopbackNetwork) {
        self.transportName = transportName
        self.addressA = a
        self.addressB = b
        self.aToB = BoundedChannel(capacity: capacity)
        self.bToA = BoundedChannel(capacity: capacity)
        self.network = network
    }

    /// Fails both directions abruptly.
    func fail() {
        failed.store(true, ordering: .sequentiallyConsistent)
        aToB.finish()
        bToA.finish()
        end()
        network.remove(self)
    }

    /// Makes end A (or B) stop reading.
    func stopReading(atA: Bool) {
        deaf.bitwiseOr(atA ? 1 : 2, ordering: .sequentiallyConsistent)
    }

    /// Whether end A (or B) stopped reading.
    func isDeaf(atA: Bool) -> Bool {
        deaf.load(ordering: .relaxed) & (atA ? 1 : 2) != 0
    }

    /// Wakes deaf ends: the link is over.
    func end() {
        endedForA.finish()
        endedForB.finish()
    }
}

/// One end of a loopback link.
final class LoopbackLink: Link {
    let id = LinkID.next()
    let transportName: String
    let remoteAddress: String
    let mtu: Int
    private let pipe: LoopbackPipe
    private let isA: Bool
    private let outbound: BoundedChannel<LoopbackPipe.Packet>
    private let inbound: BoundedChannel<LoopbackPipe.Packet>
    private let latency: Duration
    private let loss: Double
    private let closed = Atomic<Bool>(false)
    private let counters = Mutex(LinkStats())
    private let onClose: @Sendable (LoopbackLink) -> Void

    init(
        pipe: LoopbackPipe,
        isA: Bool,
        mtu: Int,
        latency: Duration,
        loss: Double,
        onClose: @escaping @Sendable (LoopbackLink) -> Void
    ) {
        self.pipe = pipe
        self.isA = isA
        self.transportName = pipe.transportName
        self.remoteAddress = isA ? pipe.addressB : pipe.addressA
        self.outbound = isA ? pipe.aToB : pipe.bToA
        self.inbound = isA ? pipe.bToA : pipe.aToB
        self.mtu = mtu
        self.latency = latency
        self.loss = loss
        self.onClose = onClose
    }

    var stats: LinkStats { counters.withLock { $0 } }

    func send(_ frame: [UInt8]) async throws {
        guard !closed.load(ordering: .relaxed) else {
            throw MeshError(.linkClosed, "loopback link to \(remoteAddress) is closed")
        }
        guard !pipe.failed.load(ordering: .relaxed) else {
            throw MeshError(.linkClosed, "loopback link to \(remoteAddress) failed")
        }
        guard frame.count <= mtu else {
            throw MeshError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the loopback MTU of \(mtu)")
        }
        counters.withLock { $0.recordSent(frame.count) }
        if pipe.silenced.load(ordering: .relaxed) || pipe.network.drop(probability: loss) { return }
        let packet = LoopbackPipe.Packet(bytes: frame, deliverAt: latency > .zero ? .now + latency : nil)
        guard await outbound.send(packet) else {
            if pipe.failed.load(ordering: .relaxed) {
                throw MeshError(.linkClosed, "loopback link to \(remoteAddress) failed")
            }
            throw MeshError(.linkClosed, "loopback link to \(remoteAddress) was closed by the remote")
        }
    }

    func receive() async throws -> [UInt8]? {
        if closed.load(ordering: .relaxed) { return nil }
        if pipe.isDeaf(atA: isA) {
            // This end stopped reading: wait for the link to end, taking nothing.
            _ = await (isA ? pipe.endedForA : pipe.endedForB).receive()
            if pipe.failed.load(ordering: .relaxed) && !closed.load(ordering: .relaxed) {
                throw MeshError(.linkClosed, "loopback link to \(remoteAddress) failed")
            }
            return nil
        }
        guard let packet = await inbound.receive() else {
            if pipe.failed.load(ordering: .relaxed) && !closed.load(ordering: .relaxed) {
                throw MeshError(.linkClosed, "loopback link to \(remoteAddress) failed")
            }
            return nil
        }
        if closed.load(ordering: .relaxed) { return nil }
        if pipe.failed.load(ordering: .relaxed) {
            throw MeshError(.linkClosed, "loopback link to \(remoteAddress) failed")
        }
        if let deliverAt = packet.deliverAt {
            try? await Task.sleep(until: deliverAt, clock: .continuous)
        }
        counters.withLock { $0.recordReceived(packet.bytes.count) }
        return packet.bytes
    }

    func close() async {
        guard !closed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        outbound.finish()
        inbound.finish()
        pipe.end()
        pipe.network.remove(pipe)
        onClose(self)
    }
}
