import MeshCore
import TransportMDNS

extension NodeConfiguration {
    /// The name this node claims in its link handshakes (docs/PROTOCOL.md §B.2.1):
    /// `node.name`, withheld when an enabled mDNS transport runs in `paranoid` mode,
    /// which announces nothing a node can keep to itself. `cautious` still sends it:
    /// that mode hides the node from the network, not from the peers it links with,
    /// which learn its peer ID in the same handshake.
    public var announcedName: String? {
        let paranoid = enabledTransports.contains {
            $0.settings.configuration(as: MDNSTransport.Configuration.self)?.discoveryMode == .paranoid
        }
        return paranoid ? nil : node.name
    }
}
