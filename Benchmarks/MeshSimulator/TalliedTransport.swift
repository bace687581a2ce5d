import MeshCore
import Synchronization

/// Wraps a transport so that every packet its links write is counted in a
/// ``WireTally`` and, with probability `loss` per frame (all its packets), dropped (seeded, so a run is
/// reproducible up to task scheduling). The wrapped transport should have no loss of
/// its own. With a `lie`, the links rewrite the hop count of every ANNOUNCE frame they
/// write, as a lying relay would.
public struct TalliedTransport: Transport {
    let inner: any Transport
    let tally: WireTally
    let loss: Double
    let random: LinkRandom
    let lie: SimulationConfiguration.HopLie?

    /// Wraps `inner`.
    /// - Parameters:
    ///   - tally: where packets are counted.
    ///   - loss: the probability (0…1) that a frame written (all its packets) is lost.
    ///   - seed: seeds the loss draws.
    ///   - lie: the hop counts this node's ANNOUNCE frames claim (nil: the true ones).
    public init(
        _ inner: any Transport,
        tally: WireTally,
        loss: Double,
        seed: UInt64,
        lie: SimulationConfiguration.HopLie? = nil
    ) {
        self.inner = inner
        self.tally = tally
        self.loss = loss
        self.random = LinkRandom(seed: seed)
        self.lie = lie
    }

    public var name: String { inner.name }
    public var capabilities: TransportCapabilities { inner.capabilities }

    public func listen(context: TransportContext) async throws {
        let wrapped = TransportContext(localPeerID: context.localPeerID, logger: context.logger) { [self] event in
            if case .inboundLink(let link) = event {
                context.report(.inboundLink(TalliedLink(inner: link, transport: self)))
            } else {
                context.report(event)
            }
        }
        try await inner.listen(context: wrapped)
    }

    public func dial(_ hint: PeerHint) async throws -> any Link {
        TalliedLink(inner: try await inner.dial(hint), transport: self)
    }

    func drop() -> Bool { loss > 0 && random.unit() < loss }
}

/// A seeded SplitMix64 behind a lock, shared by one transport's links.
final class LinkRandom: Sendable {
    private let state: Mutex<UInt64>

    init(seed: UInt64) {
        state = Mutex(seed)
    }

    /// A uniform draw in [0, 1).
    func unit() -> Double {
        let value = state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Double(value >> 11) / Double(UInt64(1) << 53)
    }
}

/// One link of a ``TalliedTransport``.
final class TalliedLink: Link {
    let inner: any Link
    let transport: TalliedTransport
    /// The kind of the segment being fragmented, for its later fragments.
    private let current = Mutex((kind: WireTally.Kind.other, routing: WireTally.RoutingFrame?.none, dropping: false))
    /// ANNOUNCE frames rewritten so far (a flapping liar alternates on it).
    private let lies = Atomic<Int>(0)

    init(inner: any Link, transport: TalliedTransport) {
        self.inner = inner
        self.transport = transport
    }

    var remoteAddress: String { inner.remoteAddress }
    var mtu: Int { inner.mtu }
    var preferredTaskExecutor: (any TaskExecutor)? { inner.preferredTaskExecutor }

    func send(_ packet: [UInt8]) async throws {
        let frame = lie(packet)
        let starts = WireTally.startsFrame(frame)
        // Loss is drawn per frame: the fragments of a frame larger than the MTU share
        // its fate, as on a link whose lower layer retransmits lost fragments (BLE's
        // L2CAP, TCP) and loses a frame when it gives up. Drawn per packet, a 48 KiB
        // frame in 1 KiB packets would cross a 10 %-loss hop once in 160 tries.
        let (kind, routing, dropped) = current.withLock { current in
            current.kind = WireTally.classify(frame, previous: current.kind)
            current.routing = WireTally.routingFrame(frame, previous: current.routing)
            if starts { current.dropping = transport.drop() }
            return (current.kind, current.routing, current.dropping)
        }
        transport.tally.wrote(
            kind,
            routing: routing,
            count: frame.count,
            startsFrame: starts,
            dropped: dropped,
            packet: frame
        )
        if dropped { return }
        try await inner.send(frame)
    }

    /// `packet`, with the hop count rewritten when it is a whole ANNOUNCE frame and the
    /// transport lies (the byte after the flag, frame header, origin and sequence).
    private func lie(_ packet: [UInt8]) -> [UInt8] {
        let hopsAt = 1 + 4 + 32 + 8
        guard let lie = transport.lie, packet.count > hopsAt, packet[0] == 0xC0,
            packet[2] == Frame.Kind.announce.rawValue
        else {
            return packet
        }
        var rewritten = packet
        let shorter =
            switch lie {
            case .shorter: true
            case .longer: false
            case .flapping: lies.add(1, ordering: .relaxed).newValue % 2 == 1
            }
        rewritten[hopsAt] = shorter ? 1 : packet[hopsAt] &+ 3
        transport.tally.lied()
        return rewritten
    }

    func receive() async throws -> [UInt8]? {
        let frame = try await inner.receive()
        transport.tally.read()
        return frame
    }

    func close() async {
        await inner.close()
    }
}
