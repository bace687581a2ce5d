import MeshCore

/// One port to publish and the IP family over which it is announced (and so which
/// address family a browser resolves it to).
struct MDNSPublishTarget: Hashable, Sendable {
    /// The IP family of a listener.
    enum Family: Hashable, Sendable {
        /// Announced over IPv4 mDNS only: browsers resolve an IPv4 address.
        case ipv4
        /// Announced over IPv6 mDNS only: browsers resolve an IPv6 (often link-local) address.
        case ipv6
        /// A dual-stack listener (`[::]`): announced over both.
        case any
    }

    var family: Family
    var port: UInt16

    /// What to publish for the addresses a TCP listener is bound to: one target per
    /// family (the first listener of each wins); with `ipv6` false only IPv4 is announced.
    static func targets(boundAddresses: [String], ipv6: Bool) -> [MDNSPublishTarget] {
        var result: [MDNSPublishTarget] = []
        for address in boundAddresses {
            guard let colon = address.lastIndex(of: ":"),
                let port = UInt16(address[address.index(after: colon)...]), port > 0
            else { continue }
            let host = String(address[..<colon])
            var family: Family
            if host.hasPrefix("[") {
                family = host == "[::]" ? .any : .ipv6
            } else {
                family = .ipv4
            }
            if !ipv6 {
                guard family != .ipv6 else { continue }
                family = .ipv4
            }
            let taken = Set(result.map(\.family))
            if family == .any {
                if taken.contains(.any) || (taken.contains(.ipv4) && taken.contains(.ipv6)) { continue }
                if taken.contains(.ipv4) { family = .ipv6 } else if taken.contains(.ipv6) { family = .ipv4 }
            } else if taken.contains(family) || taken.contains(.any) {
                continue
            }
            result.append(MDNSPublishTarget(family: family, port: port))
        }
        return result
    }
}

/// The settings of one ``MDNSDiscovery``.
struct MDNSDiscoveryOptions: Sendable {
    /// The DNS-SD type, `_scmesh._tcp`.
    var serviceType: String
    /// The instance name to publish under (before any collision renaming).
    var serviceName: String
    /// The ports to publish; empty = browse only.
    var publish: [MDNSPublishTarget]
    /// The TXT record to publish.
    var txt: MDNSTXTRecord
    /// Whether to browse.
    var browse: Bool = true
    /// Interface allow-list; empty = all.
    var interfaces: [String] = []
    /// Whether to accept IPv6 results.
    var ipv6: Bool = true
    /// Services whose TXT `id` is this are our own and skipped.
    var ownPeerID: PeerID?
    /// When `false`, ``MDNSDiscovery/start()`` throws when no daemon answers.
    var waitForDaemon: Bool = true
    /// Retry interval when even the bus is missing.
    var retryInterval: Duration = .seconds(2)
}
