import MeshCore
import TransportBLE
import TransportMDNS
import TransportTCP

/// What a node's config makes visible beyond this machine, in one line: listen
/// addresses beyond loopback, the peer ID published on the local network (mDNS
/// `discovery_mode: normal`), Bluetooth LE advertising. `scmesh run` prints it when
/// the node starts, so nobody exposes a node without being told.
public enum ExposureNotice {
    /// The one-line notice, or nil when the node is reachable only from this machine.
    public static func line(for configuration: NodeConfiguration) -> String? {
        var listening: [String] = []
        var announcing: [String] = []
        for (name, settings) in configuration.enabledTransports {
            switch settings.configuration {
            case let tcp as TCPTransport.Configuration:
                listening += tcp.listen.filter { !isLoopback($0) }.map { "\(name) \($0)" }
            case let mdns as MDNSTransport.Configuration:
                listening += mdns.listen.filter { !isLoopback($0) }.map { "\(name) \($0)" }
                if mdns.discoveryMode.revealsIdentity {
                    announcing.append("its peer ID over \(name) (discovery_mode normal; cautious hides it)")
                } else if mdns.discoveryMode.publishes {
                    announcing.append("its presence over \(name)")
                }
            case is BLETransport.Configuration:
                announcing.append("its presence over \(name) (Bluetooth LE, rotating identifier)")
            default:
                continue
            }
        }
        guard !listening.isEmpty || !announcing.isEmpty else { return nil }
        var parts: [String] = []
        if !listening.isEmpty { parts.append("listens beyond loopback (\(listening.joined(separator: ", ")))") }
        if !announcing.isEmpty { parts.append("announces \(announcing.joined(separator: " and "))") }
        return "this node " + parts.joined(separator: " and ")
            + " on the local network; see README \"Exposure\" to narrow it"
    }

    /// Whether a listen address (`ip:port`, `[ip]:port`) is a loopback address.
    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address.hasPrefix("[::1]") || address.hasPrefix("localhost:")
    }
}
