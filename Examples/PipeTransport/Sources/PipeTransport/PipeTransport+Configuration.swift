import MeshCore

extension PipeTransport {
    /// The `transports.pipe` section of a node's config.
    ///
    /// ```yaml
    /// transports:
    ///   pipe:
    ///     enabled: true
    ///     listen: /tmp/scmesh-a.sock
    ///     peers: [/tmp/scmesh-b.sock]
    /// ```
    public struct Configuration: Codable, Sendable, Equatable {
        /// Socket path to listen on; `null` for a dial-only node. Key `listen`; default `null`.
        public var listen: String?
        /// Socket paths to dial at start (redialled with backoff). Key `peers`; default `[]`.
        public var peers: [String]
        /// Largest frame per link, 4...65535. Key `mtu`; default 65535.
        public var mtu: Int

        /// The defaults (what `TransportConfiguration` asks for).
        public init() { self.init(listen: nil) }

        /// Creates a configuration; every parameter has the documented default.
        public init(listen: String? = nil, peers: [String] = [], mtu: Int = 65_535) {
            (self.listen, self.peers, self.mtu) = (listen, peers, mtu)
        }

        enum CodingKeys: String, CodingKey {
            case listen, peers, mtu
        }

        /// Decodes a section; missing keys take their defaults.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            listen = try container.decodeIfPresent(String.self, forKey: .listen)
            peers = try container.decodeIfPresent([String].self, forKey: .peers) ?? []
            mtu = try container.decodeIfPresent(Int.self, forKey: .mtu) ?? 65_535
        }

        /// Encodes every key (`listen: null` included, so `scmesh config check` shows it).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(listen, forKey: .listen)
            try container.encode(peers, forKey: .peers)
            try container.encode(mtu, forKey: .mtu)
        }

        /// Checks the values.
        /// - Throws: `MeshError` `.invalidConfiguration` naming the key.
        public func validate() throws {
            guard (PacketFramer.minimumMTU...65_535).contains(mtu) else {
                throw MeshError(.invalidConfiguration, "pipe.mtu must be \(PacketFramer.minimumMTU)...65535, got \(mtu)")
            }
            for path in [listen].compactMap({ $0 }) + peers where path.utf8.isEmpty || path.utf8.count > 107 {
                throw MeshError(.invalidConfiguration, "pipe: socket path '\(path)' must be 1...107 bytes")
            }
        }
    }
}
