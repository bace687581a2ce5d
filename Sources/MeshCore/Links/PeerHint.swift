/// Where a peer might be reached on one transport: what discovery reports and what
/// `Transport.dial` takes.
///
/// The `address` is transport-specific text (`"127.0.0.1:7420"` for TCP, a
/// Bluetooth address and PSM for BLE, a name for loopback). The peer ID is known
/// when discovery carried it (mDNS TXT, BLE beacon) and nil otherwise.
public struct PeerHint: Hashable, Sendable, CustomStringConvertible {
    /// Name of the transport that can dial this hint.
    public var transport: String
    /// Transport-specific address.
    public var address: String
    /// The peer's ID when discovery revealed it.
    public var peerID: PeerID?
    /// Extra facts from discovery (TXT records, RSSI, ...).
    public var metadata: [String: String]

    /// Creates a hint.
    public init(transport: String, address: String, peerID: PeerID? = nil, metadata: [String: String] = [:]) {
        self.transport = transport
        self.address = address
        self.peerID = peerID
        self.metadata = metadata
    }

    public var description: String {
        "\(transport)://\(address)" + (peerID.map { " (\($0.short))" } ?? "")
    }
}
