import MeshCore
import Synchronization

/// The in-memory "medium" that ``LoopbackTransport``s share: who listens where, which
/// pairs are partitioned, and the live links between them. Deterministic: loss uses a
/// seeded generator.
///
/// ```swift
/// let network = LoopbackNetwork()
/// let a = LoopbackTransport(address: "a", network: network)
/// let b = LoopbackTransport(address: "b", network: network)
/// network.killLinks(between: "a", and: "b")   // both ends fail at once
/// network.partition("a", "b")                 // ... and stay unreachable
/// network.heal("a", "b")
/// ```
public final class LoopbackNetwork: Sendable {
    struct Listener {
        var transport: LoopbackTransport
        var peerID: PeerID?
    }

    struct State {
        var listeners: [String: [String: Listener]] = [:]  // transport name -> address -> listener
        var partitions: Set<Pair> = []
        var transportPartitions: Set<TransportPair> = []
        var pipes: [ObjectIdentifier: LoopbackPipe] = [:]
        var random: SplitMix64
    }

    struct TransportPair: Hashable {
        let pair: Pair
        let transport: String
    }

    struct Pair: Hashable {
        let a: String
        let b: String
        init(_ x: String, _ y: String) {
            (a, b) = x < y ? (x, y) : (y, x)
        }
    }

    let state: Mutex<State>

    /// Creates an empty network; `seed` makes loss reproducible.
    public init(seed: UInt64 = 0x5C3E5) {
        state = Mutex(State(random: SplitMix64(seed: seed)))
    }

    /// Makes `a` and `b` unreachable from each other on every loopback transport, or
    /// only on the transport named `transport`: their links fail and dials between
    /// them fail until ``heal(_:_:transport:)``.
    public func partition(_ a: String, _ b: String, transport: String? = nil) {
        state.withLock { state in
            if let transport {
                state.transportPartitions.insert(TransportPair(pair: Pair(a, b), transport: transport))
            } else {
                state.partitions.insert(Pair(a, b))
            }
        }
        killLinks(between: a, and: b, transport: transport)
    }

    /// Undoes ``partition(_:_:transport:)``.
    public func heal(_ a: String, _ b: String, transport: String? = nil) {
        state.withLock { state in
            if let transport {
                state.transportPartitions.remove(TransportPair(pair: Pair(a, b), transport: transport))
            } else {
                state.partitions.remove(Pair(a, b))
            }
        }
    }

    /// Fails every live link between `a` and `b` at once (both ends see an error),
    /// optionally only those of one transport name. New dials still work.
    public func killLinks(between a: String, and b: String, transport: String? = nil) {
        let pair = Pair(a, b)
        let victims = state.withLock { state in
            state.pipes.values.filter {
                Pair($0.addressA, $0.addressB) == pair && (transport == nil || $0.transportName == transport)
            }
        }
        for pipe in victims { pipe.fail() }
    }

    /// Silences every live link between `a` and `b` (optionally of one transport):
    /// the links stay open but every frame sent on them vanishes, as when a radio
    /// goes out of range. Only ack timeouts and keepalives can tell.
    public func silenceLinks(between a: String, and b: String, transport: String? = nil) {
        let pair = Pair(a, b)
        let victims = state.withLock { state in
            state.pipes.values.filter {
                Pair($0.addressA, $0.addressB) == pair && (transport == nil || $0.transportName == transport)
            }
        }
        for pipe in victims { pipe.silenced.store(true, ordering: .sequentiallyConsistent) }
    }

    /// Makes `reader` stop reading its live links with `writer` (optionally of one
    /// transport): frames from `writer` pile up in the link's buffer (`buffer_frames`)
    /// and then `writer`'s sends wait, as with a remote that never reads. The links
    /// stay open; `reader` still sends. Links opened later read normally.
    public func stopReading(at reader: String, from writer: String, transport: String? = nil) {
        let pair = Pair(reader, writer)
        let victims = state.withLock { state in
            state.pipes.values.filter {
                Pair($0.addressA, $0.addressB) == pair && (transport == nil || $0.transportName == transport)
            }
        }
        for pipe in victims {
            // A pipe's A end is the dialler; the reader may be either end.
            pipe.stopReading(atA: pipe.addressA == reader)
        }
    }

    /// The number of live links (pipes) on the network.
    public var liveLinkCount: Int { state.withLock { $0.pipes.count } }

    func isPartitioned(_ a: String, _ b: String, transport: String) -> Bool {
        state.withLock { state in
            state.partitions.contains(Pair(a, b))
                || state.transportPartitions.contains(TransportPair(pair: Pair(a, b), transport: transport))
        }
    }

    func register(_ transport: LoopbackTransport, address: String, peerID: PeerID?) throws(MeshError) -> [Listener] {
        try state.withLock { state throws(MeshError) -> [Listener] in
            let name = transport.name
            if state.listeners[name]?[address] != nil {
                throw MeshError(.transportUnavailable, "loopback address \(address) is already in use on \(name)")
            }
            let others = Array((state.listeners[name] ?? [:]).values)
            state.listeners[name, default: [:]][address] = Listener(transport: transport, peerID: peerID)
            return others
        }
    }

    func unregister(name: String, address: String) -> [Listener] {
        state.withLock { state in
            state.listeners[name]?[address] = nil
            return Array((state.listeners[name] ?? [:]).values)
        }
    }

    func listener(name: String, address: String) -> Listener? {
        state.withLock { $0.listeners[name]?[address] }
    }

    func add(_ pipe: LoopbackPipe) {
        state.withLock { $0.pipes[ObjectIdentifier(pipe)] = pipe }
    }

    func remove(_ pipe: LoopbackPipe) {
        _ = state.withLock { $0.pipes.removeValue(forKey: ObjectIdentifier(pipe)) }
    }

    /// Draws whether one frame is lost, deterministically.
    func drop(probability: Double) -> Bool {
        guard probability > 0 else { return false }
        return state.withLock { state in
            Double(state.random.next() >> 11) / Double(1 << 53) < probability
        }
    }
}

/// A small deterministic generator (SplitMix64).
struct SplitMix64: RandomNumberGenerator, Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
