#if canImport(Glibc)
import Glibc
#endif

/// The IP addresses of this host's network interfaces that are up (getifaddrs(3)),
/// for turning a wildcard listen address (`0.0.0.0:port`, `[::]:port`) into addresses
/// another host can dial.
enum InterfaceAddresses {
    /// One interface address.
    struct Entry: Hashable {
        /// The address in text (`192.0.2.7`, `2001:db8::7`).
        var text: String
        /// Whether it is IPv6.
        var isIPv6: Bool
        /// Whether it is a loopback address.
        var isLoopback: Bool
    }

    /// Every IPv4 and IPv6 address of an interface that is up; IPv6 link-local
    /// addresses (which need a scope to dial) left out.
    static func current() -> [Entry] {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return [] }
        defer { freeifaddrs(head) }
        var entries: [Entry] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let current = cursor {
            defer { cursor = current.pointee.ifa_next }
            let flags = current.pointee.ifa_flags
            guard flags & UInt32(IFF_UP) != 0, let address = current.pointee.ifa_addr else { continue }
            let loopback = flags & UInt32(IFF_LOOPBACK) != 0
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    var inAddress = pointer.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &inAddress, &buffer, socklen_t(buffer.count))
                }
                entries.append(Entry(text: Self.text(buffer), isIPv6: false, isLoopback: loopback))
            case AF_INET6:
                let linkLocal = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    var inAddress = pointer.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &inAddress, &buffer, socklen_t(buffer.count))
                    return pointer.pointee.sin6_scope_id != 0
                }
                guard !linkLocal else { continue }
                entries.append(Entry(text: Self.text(buffer), isIPv6: true, isLoopback: loopback))
            default:
                continue
            }
        }
        return entries
    }

    /// A NUL-terminated C string buffer as a String.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The dialable addresses for one bound listen address (`ip:port`, `[ip]:port`):
    /// the address itself, or for a wildcard every interface address of its family
    /// (loopback ones only when there is no other).
    static func dialable(bound: String, interfaces: [Entry]) -> [String] {
        let (host, port): (String, String)
        if bound.hasPrefix("["), let close = bound.firstIndex(of: "]") {
            host = String(bound[bound.index(after: bound.startIndex)..<close])
            port = String(bound[bound.index(after: close)...].dropFirst())
        } else if let colon = bound.lastIndex(of: ":") {
            host = String(bound[..<colon])
            port = String(bound[bound.index(after: colon)...])
        } else {
            return [bound]
        }
        let wildcardV4 = host == "0.0.0.0"
        let wildcardV6 = host == "::"
        guard wildcardV4 || wildcardV6 else { return [bound] }
        // A socket bound to [::] also accepts IPv4 (unless IPV6_V6ONLY).
        let candidates = interfaces.filter { wildcardV6 || !$0.isIPv6 }
        let outside = candidates.filter { !$0.isLoopback }
        let chosen = outside.isEmpty ? candidates : outside
        return chosen.map { $0.isIPv6 ? "[\($0.text)]:\(port)" : "\($0.text):\(port)" }
    }
}
