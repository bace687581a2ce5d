import MeshCore

/// One resolved `_scmesh._tcp` service: where it listens and what its TXT record says.
struct MDNSService: Hashable, Sendable, CustomStringConvertible {
    /// The service instance name (`scmesh-1a2b3c4d`, or `... #2` after a collision).
    var name: String
    /// The interface it was found on (`lo`, `eth0`, `veth1`); empty when unknown.
    var interfaceName: String
    /// The host name the service points at (`host.local`).
    var hostName: String
    /// The IP address without port: `10.0.0.2`, `fd00::2`, or `fe80::1%veth1`.
    var address: String
    /// The TCP port of the service.
    var port: UInt16
    /// The decoded TXT record.
    var txt: MDNSTXTRecord

    /// Creates a service; an IPv6 link-local address gets the interface as its scope.
    init(
        name: String,
        interfaceName: String,
        hostName: String,
        address: String,
        isIPv6: Bool,
        port: UInt16,
        txt: MDNSTXTRecord
    ) {
        self.name = name
        self.interfaceName = interfaceName
        self.hostName = hostName
        self.port = port
        self.txt = txt
        if isIPv6, Self.isLinkLocal(address), !address.contains("%"), !interfaceName.isEmpty {
            self.address = "\(address)%\(interfaceName)"
        } else {
            self.address = address
        }
    }

    /// `ip:port`, or `[v6]:port` for IPv6 (`[fe80::1%veth1]:7420`): what `TCPTransport.dial` takes.
    var endpoint: String {
        address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }

    /// The hint reported to the router.
    func hint(transport: String) -> PeerHint {
        PeerHint(transport: transport, address: endpoint, peerID: txt.peerID, metadata: txt.fields)
    }

    var description: String { "'\(name)' at \(endpoint)" }

    /// Whether an IPv6 address is in fe80::/10.
    static func isLinkLocal(_ address: String) -> Bool {
        let lower = address.lowercased()
        return ["fe8", "fe9", "fea", "feb"].contains { lower.hasPrefix($0) }
    }
}
