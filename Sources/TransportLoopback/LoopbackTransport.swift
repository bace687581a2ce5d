import Logging
import MeshCore
import Synchronization

/// An in-memory transport for testing the core and for simulations: deterministic,
/// with knobs for MTU, latency, loss, buffer size, partitions and killing links
/// (see ``LoopbackNetwork``).
///
/// Transports with the same ``name`` on one ``LoopbackNetwork`` discover each other
/// (hints carry the peer ID, as mDNS TXT records do) and can dial each other by
/// address. Use several names (`"lo10"`, `"lo20"`) to model several media.
public final class LoopbackTransport: Transport {
    /// Knobs for one loopback transport.
    public struct Configuration: Codable, Sendable, Hashable {
        /// Largest frame per send (the core fragments to it). At least 4.
        public var mtu: Int
        /// One-way delay added to every frame, in milliseconds.
        public var latencyMilliseconds: Int
        /// Probability (0...1) that a frame is silently lost.
        public var loss: Double
        /// Frames buffered per direction before `send` waits (back-pressure).
        public var bufferFrames: Int
        /// Whether this transport announces itself to, and discovers, the others.
        public var discovery: Bool
        /// Nominal bitrate reported in capabilities.
        public var bitrate: Int

        /// Defaults: MTU 1024, no latency or loss, 64 frames of buffer, discovery on.
        public init(
            mtu: Int = 1024,
            latencyMilliseconds: Int = 0,
            loss: Double = 0,
            bufferFrames: Int = 64,
            discovery: Bool = true,
            bitrate: Int = 1_000_000_000
        ) {
            self.mtu = mtu
            self.latencyMilliseconds = latencyMilliseconds
            self.loss = loss
            self.bufferFrames = bufferFrames
            self.discovery = discovery
            self.bitrate = bitrate
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case mtu
            case latencyMilliseconds = "latency_ms"
            case loss
            case bufferFrames = "buffer_frames"
            case discovery
            case bitrate
        }

        public init(from decoder: any Decoder) throws {
            let defaults = Configuration()
            let container = try decoder.container(keyedBy: CodingKeys.self)
            mtu = try container.decodeIfPresent(Int.self, forKey: .mtu) ?? defaults.mtu
            latencyMilliseconds =
                try container.decodeIfPresent(Int.self, forKey: .latencyMilliseconds) ?? defaults.latencyMilliseconds
            loss = try container.decodeIfPresent(Double.self, forKey: .loss) ?? defaults.loss
            bufferFrames = try container.decodeIfPresent(Int.self, forKey: .bufferFrames) ?? defaults.bufferFrames
            discovery = try container.decodeIfPresent(Bool.self, forKey: .discovery) ?? defaults.discovery
            bitrate = try container.decodeIfPresent(Int.self, forKey: .bitrate) ?? defaults.bitrate
        }

        /// Checks every value, naming the bad key.
        public func validate() throws(MeshError) {
            guard mtu >= PacketFramer.minimumMTU else {
                throw MeshError(.invalidConfiguration, "mtu: must be at least \(PacketFramer.minimumMTU), got \(mtu)")
            }
            guard latencyMilliseconds >= 0 else {
                throw MeshError(.invalidConfiguration, "latency_ms: must not be negative, got \(latencyMilliseconds)")
            }
            guard (0...1).contains(loss) else {
                throw MeshError(.invalidConfiguration, "loss: must be between 0 and 1, got \(loss)")
            }
            guard bufferFrames >= 1 else {
                throw MeshError(.invalidConfiguration, "buffer_frames: must be at least 1, got \(bufferFrames)")
            }
            guard bitrate > 0 else {
                throw MeshError(.invalidConfiguration, "bitrate: must be positive, got \(bitrate)")
            }
        }
    }

    public let name: String
    /// This transport's address on the network.
    public let address: String
    /// The network it lives on.
    public let network: LoopbackNetwork
    /// Its configuration.
    public let configuration: Configuration
    private let state = Mutex(State())

    private struct State {
        var started = false
        var stopped = false
        var peerID: PeerID?
        var context: TransportContext?
        var links: [LinkID: LoopbackLink] = [:]
    }

    /// Creates a transport at `address` on `network`.
    public init(
        name: String = "loopback",
        address: String,
        network: LoopbackNetwork,
        configuration: Configuration = .init()
    ) {
        self.name = name
        self.address = address
        self.network = network
        self.configuration = configuration
    }

    public var capabilities: TransportCapabilities {
        TransportCapabilities(
            maxFrameSize: configuration.mtu,
            nominalBitrate: configuration.bitrate,
            isReliable: configuration.loss == 0,
            needsDiscovery: false,
            powerCost: 0
        )
    }

    /// This transport's hint, as others discover it.
    public var hint: PeerHint {
        PeerHint(transport: name, address: address, peerID: state.withLock { $0.peerID })
    }

    /// Joins the network, announces itself to the other loopback transports of the same
    /// name, and serves links until cancelled; then leaves the network and closes its
    /// links.
    public func listen(context: TransportContext) async throws {
        try configuration.validate()
        let first = state.withLock { state -> Bool in
            defer { state.started = true }
            state.peerID = context.localPeerID
            state.context = context
            return !state.started
        }
        guard first else { throw MeshError(.invalidArgument, "loopback transport \(address) started twice") }
        let others: [LoopbackNetwork.Listener]
        do {
            others = try network.register(self, address: address, peerID: context.localPeerID)
        } catch {
            state.withLock { $0.stopped = true }
            throw error
        }
        context.report(.listening(addresses: [address]))
        if configuration.discovery {
            let mine = PeerHint(transport: name, address: address, peerID: context.localPeerID)
            for other in others where other.transport.configuration.discovery {
                context.report(
                    .peerDiscovered(PeerHint(transport: name, address: other.transport.address, peerID: other.peerID))
                )
                other.transport.announce(.peerDiscovered(mine))
            }
        }
        await waitUntilCancelled()
        await shutDown()
    }

    func announce(_ event: TransportEvent) {
        let context: TransportContext? = state.withLock { $0.stopped ? nil : $0.context }
        context?.report(event)
    }

    public func dial(_ hint: PeerHint) async throws -> any Link {
        guard state.withLock({ $0.started && !$0.stopped }) else {
            throw MeshError(.notRunning, "loopback transport \(address) is not running")
        }
        guard !network.isPartitioned(address, hint.address, transport: name),
            let remote = network.listener(name: name, address: hint.address)
        else {
            throw MeshError(.dialFailed, "nothing listens at loopback address \(hint.address) on \(name)")
        }
        let pipe = LoopbackPipe(
            transportName: name,
            a: address,
            b: hint.address,
            capacity: configuration.bufferFrames,
            network: network
        )
        network.add(pipe)
        let latency = Duration.milliseconds(configuration.latencyMilliseconds)
        let mtu = min(configuration.mtu, remote.transport.configuration.mtu)
        let local = LoopbackLink(pipe: pipe, isA: true, mtu: mtu, latency: latency, loss: configuration.loss) {
            [weak self] link in
            self?.forget(link)
        }
        let remoteEnd = LoopbackLink(
            pipe: pipe,
            isA: false,
            mtu: mtu,
            latency: .milliseconds(remote.transport.configuration.latencyMilliseconds),
            loss: remote.transport.configuration.loss
        ) { [weak transport = remote.transport] link in
            transport?.forget(link)
        }
        track(local)
        guard remote.transport.accept(remoteEnd) else {
            await local.close()
            throw MeshError(.dialFailed, "loopback address \(hint.address) stopped listening")
        }
        return local
    }

    func accept(_ link: LoopbackLink) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.links[link.id] = link
            return true
        }
        if accepted { announce(.inboundLink(link)) }
        return accepted
    }

    private func track(_ link: LoopbackLink) {
        state.withLock { $0.links[link.id] = link }
    }

    func forget(_ link: LoopbackLink) {
        _ = state.withLock { $0.links.removeValue(forKey: link.id) }
    }

    /// Links currently open on this transport.
    public var openLinkCount: Int { state.withLock { $0.links.count } }

    private func shutDown() async {
        let links: [LoopbackLink]? = state.withLock { state in
            guard !state.stopped else { return nil }
            state.stopped = true
            return Array(state.links.values)
        }
        guard let links else { return }
        let others = network.unregister(name: name, address: address)
        if configuration.discovery {
            let mine = PeerHint(transport: name, address: address, peerID: state.withLock { $0.peerID })
            for other in others { other.transport.announce(.peerLost(mine)) }
        }
        for link in links { await link.close() }
        state.withLock { $0.context = nil }
    }
}
