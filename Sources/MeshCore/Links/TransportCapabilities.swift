/// What a transport's medium can do. The routing policy reads these to decide
/// which transport suits a payload (for example, never bulk over BLE first).
public struct TransportCapabilities: Sendable, Hashable {
    /// Largest frame a single `Link.send` accepts (the link MTU). The core
    /// fragments anything larger. Stream transports allow at most 65,535.
    public var maxFrameSize: Int
    /// Nominal throughput in bits per second.
    public var nominalBitrate: Int
    /// Whether the medium delivers every frame in order without loss.
    public var isReliable: Bool
    /// Whether peers must be discovered before they can be dialled.
    public var needsDiscovery: Bool
    /// Relative energy cost per byte: 0 = mains-powered wire, 10 = radio on battery.
    public var powerCost: Int

    /// Creates a capability description.
    public init(maxFrameSize: Int, nominalBitrate: Int, isReliable: Bool, needsDiscovery: Bool, powerCost: Int) {
        self.maxFrameSize = maxFrameSize
        self.nominalBitrate = nominalBitrate
        self.isReliable = isReliable
        self.needsDiscovery = needsDiscovery
        self.powerCost = powerCost
    }

    /// Seconds the medium needs to move `bytes` at its nominal bitrate.
    public func transferTime(bytes: Int) -> Double {
        guard nominalBitrate > 0 else { return .infinity }
        return Double(bytes) * 8 / Double(nominalBitrate)
    }
}
