#if canImport(CAvahi)
import CAvahi

/// Avahi's helpers that need no client.
enum AvahiNames {
    /// The next alternative for a service name after a collision (`name #2`, `#3`, ...).
    static func alternativeServiceName(_ name: String) -> String {
        guard let alternative = avahi_alternative_service_name(name) else { return name + " #2" }
        defer { avahi_free(alternative) }
        return String(cString: alternative)
    }

    /// The name of a network interface index (`lo`, `veth1`), or nil.
    static func interfaceName(_ index: Int32) -> String? {
        guard index > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        return buffer.withUnsafeMutableBufferPointer { buffer in
            guard if_indextoname(UInt32(index), buffer.baseAddress) != nil else { return nil }
            return String(cString: buffer.baseAddress!)
        }
    }

    /// The index of a network interface name, or nil when it does not exist.
    static func interfaceIndex(_ name: String) -> Int32? {
        let index = if_nametoindex(name)
        return index == 0 ? nil : Int32(index)
    }

    /// Avahi's protocol numbers.
    static let ipv4 = Int32(AVAHI_PROTO_INET)
    static let ipv6 = Int32(AVAHI_PROTO_INET6)
    static let anyProtocol = Int32(AVAHI_PROTO_UNSPEC)
}

#endif
