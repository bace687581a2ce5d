import MeshCore
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP endpoint in the text form the TCP transport uses for hints and config:
/// `"127.0.0.1:7420"`, `"[::1]:7420"`, `"[fe80::1%eth0]:7420"` or `"seed.example.org:7420"`.
///
/// ```swift
/// let address = try TCPAddress("[fe80::1%veth0]:7420")
/// address.host         // "fe80::1%veth0"
/// address.description  // "[fe80::1%veth0]:7420"
/// let hint = PeerHint(transport: "tcp", address: TCPAddress(host: "::1", port: 7420).description)
/// ```
public struct TCPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The host without brackets: an IPv4 address, an IPv6 address with an optional
    /// `%zone` (interface name or index), or a DNS name.
    public var host: String
    /// The port, 0...65535 (0 only makes sense when listening).
    public var port: Int

    /// Creates an address from its parts; brackets are added by ``description``.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `"host:port"` or `"[ipv6]:port"`.
    /// - Throws: ``MeshError`` `.invalidArgument` saying what is wrong with the text.
    public init(_ text: String) throws {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw MeshError(.invalidArgument, "'\(text)' has '[' but no ']'; write \"[::1]:7420\"")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else {
                throw MeshError(.invalidArgument, "'\(text)' has no port after ']'; write \"[::1]:7420\"")
            }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else {
                throw MeshError(.invalidArgument, "'\(text)' has no port; write host:port, e.g. \"127.0.0.1:7420\"")
            }
            hostPart = text[..<colon]
            guard !hostPart.contains(":") else {
                throw MeshError(.invalidArgument, "'\(text)' looks like IPv6 without brackets; write \"[::1]:7420\"")
            }
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty else {
            throw MeshError(.invalidArgument, "'\(text)' has an empty host")
        }
        guard let port = Int(portPart), (0...65535).contains(port) else {
            throw MeshError(.invalidArgument, "'\(text)' has port '\(portPart)', which is not a number in 0...65535")
        }
        self.host = String(hostPart)
        self.port = port
    }

    /// `"host:port"`, with the host in brackets when it is IPv6.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Whether ``host`` is an IPv4 or IPv6 literal (with an optional zone) rather than a name.
    public var isIPLiteral: Bool {
        (try? socketAddress()) != nil
    }

    /// The socket address when ``host`` is an IP literal, nil when it is a DNS name.
    /// - Throws: ``MeshError`` `.invalidArgument` when the IPv6 zone names no interface.
    func socketAddress() throws -> SocketAddress? {
        guard let percent = host.firstIndex(of: "%") else {
            return try? SocketAddress(ipAddress: host, port: port)
        }
        let literal = String(host[..<percent])
        let zone = String(host[host.index(after: percent)...])
        guard literal.contains(":"), case .v6(let v6)? = try? SocketAddress(ipAddress: literal, port: port) else {
            return nil
        }
        let scopeID = UInt32(zone) ?? if_nametoindex(zone)
        guard scopeID != 0 else {
            throw MeshError(
                .invalidArgument,
                "'\(description)' names interface '\(zone)', which this host does not have"
            )
        }
        var raw = v6.address
        withUnsafeMutableBytes(of: &raw) {
            $0.storeBytes(of: scopeID, toByteOffset: Self.scopeIDOffset, as: UInt32.self)
        }
        return SocketAddress(raw, host: host)
    }

    /// The text form of a socket address the kernel reported (`ip:port`).
    static func text(of address: SocketAddress?) -> String {
        guard let address, let ip = address.ipAddress, let port = address.port else {
            return address.map { "\($0)" } ?? "unknown"
        }
        if case .v6 = address, let scopeID = scopeID(of: address), scopeID != 0 {
            var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
            let zone =
                if_indextoname(scopeID, &name) != nil
                ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                : String(scopeID)
            return TCPAddress(host: "\(ip)%\(zone)", port: port).description
        }
        return TCPAddress(host: ip, port: port).description
    }

    /// Where `sin6_scope_id` sits in a `sockaddr_in6` (after family 2, port 2, flow info 4
    /// and address 16 bytes, on Linux and Darwin alike). Accessed by offset because the C
    /// struct's members are not visible here under MemberImportVisibility.
    private static let scopeIDOffset = 24

    /// The `sin6_scope_id` of an IPv6 socket address.
    static func scopeID(of address: SocketAddress) -> UInt32? {
        address.withSockAddr { pointer, length in
            guard length >= scopeIDOffset + 4 else { return nil }
            return UnsafeRawPointer(pointer).loadUnaligned(fromByteOffset: scopeIDOffset, as: UInt32.self)
        }
    }
}
