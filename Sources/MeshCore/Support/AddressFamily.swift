/// The IP family of a `host:port` address, for refusing to dial an address that a
/// peer or an invitation gave outside the families this node's transport uses.
public enum AddressFamily: Sendable, Hashable {
    /// `1.2.3.4:port`.
    case ipv4
    /// `[::1]:port`.
    case ipv6

    /// The family of `address` (`a.b.c.d:port` or `[v6]:port`), or nil when it is not
    /// an IP literal with a port (a DNS name, a BLE address, a loopback name).
    public init?(of address: String) {
        if address.hasPrefix("["), let close = address.firstIndex(of: "]") {
            let host = address[address.index(after: address.startIndex)..<close]
            let rest = address[address.index(after: close)...]
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }),
                rest.hasPrefix(":"), UInt16(rest.dropFirst()) != nil
            else { return nil }
            self = .ipv6
            return
        }
        let parts = address.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, UInt16(parts[1]) != nil else { return nil }
        let octets = parts[0].split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return nil }
        self = .ipv4
    }

    /// Whether a transport listening on `local` may dial `address`: always when the
    /// transport's own addresses are not IP addresses (its rules are its own), else
    /// only an IP literal of a family it listens on — never a DNS name.
    public static func admits(_ address: String, listeningOn local: [String]) -> Bool {
        let families = local.compactMap(AddressFamily.init(of:))
        guard !families.isEmpty, families.count == local.count else { return true }
        guard let family = AddressFamily(of: address) else { return false }
        return families.contains(family)
    }
}
