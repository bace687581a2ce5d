import MeshCore

extension TCPTransport {
    /// The settings of one TCP transport: the `transports.tcp` section of a node's config.
    ///
    /// Every key has a default, so an empty section (`{}`) is a valid configuration that
    /// listens on `127.0.0.1:7420`. Keys are snake_case in files; decoding rejects keys it
    /// does not know (see ``keys``), so a typo is reported instead of silently ignored.
    ///
    /// ```yaml
    /// transports:
    ///   tcp:
    ///     listen: ["127.0.0.1:7420", "[::1]:7420"]
    ///     bootstrap: ["seed.example.org:7420"]
    ///     max_frame_size: 65535
    ///     max_inbound: 128
    ///     max_per_address: 8
    ///     connect_timeout_ms: 5000
    /// ```
    public struct Configuration: Codable, Sendable, Equatable {
        /// Addresses to listen on: IPv4 `"a.b.c.d:port"` or IPv6 `"[addr]:port"`
        /// (`"[fe80::1%eth0]:7420"` for a scoped link-local address). Port 0 picks a free
        /// port; the `.listening` event (and ``TCPTransport/boundAddresses``) has the result.
        /// Key `listen`; default `["127.0.0.1:7420"]`; may be empty (dial-only node).
        public var listen: [String]
        /// Peers to dial at start: `"host:port"` where host may be a DNS name, an IPv4
        /// address or a bracketed IPv6 address. The transport reports each as a
        /// discovered hint; the router dials and redials them with backoff.
        /// Key `bootstrap`; default `[]`.
        public var bootstrap: [String]
        /// Largest frame a link carries, in bytes, and so the link MTU. A remote that
        /// announces a larger frame is disconnected. Must be 16...65535 (the length
        /// prefix is two bytes). Key `max_frame_size`; default 65535.
        public var maxFrameSize: Int
        /// Most inbound connections open at once; further ones are closed on accept with
        /// a log line. Must be at least 1. Key `max_inbound`; default 128.
        public var maxInbound: Int
        /// Most inbound connections open at once from one remote IP address. Must be at
        /// least 1. Key `max_per_address`; default 8.
        public var maxPerAddress: Int
        /// How long a dial waits for the TCP connection, in milliseconds. Must be
        /// 1...600000. Key `connect_timeout_ms`; default 5000.
        public var connectTimeoutMilliseconds: Int

        /// The default listen address, `127.0.0.1:7420`.
        public static let defaultListen = ["127.0.0.1:7420"]
        /// The default port, 7420.
        public static let defaultPort = 7420

        /// Every key a configuration file may use in this section.
        public static let keys: [String] = CodingKeys.allCases.map(\.rawValue)

        /// Creates a configuration; every parameter has the documented default.
        public init(
            listen: [String] = Configuration.defaultListen,
            bootstrap: [String] = [],
            maxFrameSize: Int = 65535,
            maxInbound: Int = 128,
            maxPerAddress: Int = 8,
            connectTimeoutMilliseconds: Int = 5000
        ) {
            self.listen = listen
            self.bootstrap = bootstrap
            self.maxFrameSize = maxFrameSize
            self.maxInbound = maxInbound
            self.maxPerAddress = maxPerAddress
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case listen
            case bootstrap
            case maxFrameSize = "max_frame_size"
            case maxInbound = "max_inbound"
            case maxPerAddress = "max_per_address"
            case connectTimeoutMilliseconds = "connect_timeout_ms"
        }

        /// Decodes a configuration; missing keys take their defaults.
        /// - Throws: `DecodingError.dataCorrupted` naming the key when the section holds a
        ///   key not in ``keys``; the usual `DecodingError` for a value of the wrong type.
        ///   Decoding does not check ranges: call ``validate()``.
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(CodingKeys.self, section: "TCP transport")
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = Configuration()
            listen = try container.decodeIfPresent([String].self, forKey: .listen) ?? defaults.listen
            bootstrap = try container.decodeIfPresent([String].self, forKey: .bootstrap) ?? defaults.bootstrap
            maxFrameSize = try container.decodeIfPresent(Int.self, forKey: .maxFrameSize) ?? defaults.maxFrameSize
            maxInbound = try container.decodeIfPresent(Int.self, forKey: .maxInbound) ?? defaults.maxInbound
            maxPerAddress = try container.decodeIfPresent(Int.self, forKey: .maxPerAddress) ?? defaults.maxPerAddress
            connectTimeoutMilliseconds =
                try container.decodeIfPresent(Int.self, forKey: .connectTimeoutMilliseconds)
                ?? defaults.connectTimeoutMilliseconds
        }

        /// Checks every value and names the first bad key.
        ///
        /// - Throws: ``MeshError`` `.invalidConfiguration` whose message names the key, the
        ///   bad value and the allowed range, e.g.
        ///   `tcp.max_frame_size must be 16...65535, got 70000`.
        public func validate() throws {
            for entry in listen {
                do {
                    let address = try TCPAddress(entry)
                    guard address.isIPLiteral else {
                        throw MeshError(.invalidArgument, "'\(address.host)' is not an IP address")
                    }
                } catch let error as MeshError {
                    throw Self.invalid(
                        .listen,
                        "entry '\(entry)' is not an IP address with a port (\(error.message)); "
                            + "write \"127.0.0.1:7420\" or \"[::1]:7420\""
                    )
                }
            }
            for entry in bootstrap {
                do {
                    let address = try TCPAddress(entry)
                    guard address.port > 0 else {
                        throw MeshError(.invalidArgument, "port 0 cannot be dialled")
                    }
                } catch let error as MeshError {
                    throw Self.invalid(
                        .bootstrap,
                        "entry '\(entry)' is not host:port (\(error.message)); write \"seed.example.org:7420\""
                    )
                }
            }
            try Self.check(.maxFrameSize, maxFrameSize, 16...65535)
            try Self.check(.maxInbound, maxInbound, 1...1_000_000)
            try Self.check(.maxPerAddress, maxPerAddress, 1...1_000_000)
            try Self.check(.connectTimeoutMilliseconds, connectTimeoutMilliseconds, 1...600_000)
        }

        private static func check(_ key: CodingKeys, _ value: Int, _ range: ClosedRange<Int>) throws {
            guard range.contains(value) else {
                throw invalid(key, "must be \(range.lowerBound)...\(range.upperBound), got \(value)")
            }
        }

        private static func invalid(_ key: CodingKeys, _ problem: String) -> MeshError {
            MeshError(.invalidConfiguration, "tcp.\(key.rawValue) \(problem)")
        }
    }
}
