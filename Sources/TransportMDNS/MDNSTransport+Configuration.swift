import MeshCore

extension MDNSTransport {
    /// How much a node reveals on the local network (the seed app's discovery setting).
    public enum DiscoveryMode: String, Codable, Sendable, CaseIterable {
        /// Publish the service with the peer ID in its TXT record, and browse.
        case normal
        /// Publish the service without identity (TXT has only the protocol version, the
        /// instance name is random); peers learn who we are in the link handshake. Browse.
        case cautious
        /// Never publish; only browse and dial what others publish.
        case paranoid

        /// Whether this mode publishes a service.
        public var publishes: Bool { self != .paranoid }
        /// Whether this mode puts the peer ID in the TXT record.
        public var revealsIdentity: Bool { self == .normal }
    }

    /// The settings of one mDNS transport: the `transports.mdns` section of a node's config.
    ///
    /// Every key has a default, so an empty section (`{}`) is valid. Keys are snake_case
    /// in files; decoding rejects keys it does not know (see ``keys``).
    ///
    /// ```yaml
    /// transports:
    ///   mdns:
    ///     discovery_mode: normal        # normal | cautious | paranoid
    ///     service_type: _scmesh._tcp
    ///     service_name: ""              # "" = scmesh-<first 8 hex of peer ID> (random when cautious)
    ///     interfaces: []                # [] = every interface the daemon uses; else e.g. [eth0, wlan0]
    ///     listen: ["0.0.0.0:0"]         # the TCP listener whose port is published
    ///     ipv6: true                    # also browse/resolve over IPv6 (link-local dialled with %iface)
    ///     wait_for_daemon: true         # no avahi-daemon at start: wait (true) or fail start (false)
    ///     retry_interval_ms: 2000       # retry when not even the system bus answers
    ///     max_frame_size: 65535
    ///     connect_timeout_ms: 5000
    /// ```
    public struct Configuration: Codable, Sendable, Equatable {
        /// What to publish: `normal`, `cautious` or `paranoid` (see ``DiscoveryMode``).
        /// Key `discovery_mode`; default `normal`.
        public var discoveryMode: DiscoveryMode
        /// The DNS-SD service type, `_name._tcp`. Key `service_type`; default `_scmesh._tcp`.
        public var serviceType: String
        /// The service instance name; empty picks `scmesh-<first 8 hex digits of the peer ID>`,
        /// or `scmesh-<8 random hex digits>` in `cautious` mode. At most 63 bytes.
        /// On a name collision Avahi's alternative (`name #2`) is used.
        /// Key `service_name`; default `""`.
        public var serviceName: String
        /// Interfaces to publish on and to accept browse results from (`lo`, `eth0`);
        /// empty means every interface the avahi-daemon uses. Key `interfaces`; default `[]`.
        public var interfaces: [String]
        /// Where the inner TCP listener binds; its port is the one published. An IP literal
        /// with a port (`"0.0.0.0:0"`, `"[::]:0"`); port 0 picks a free port.
        /// Key `listen`; default `["0.0.0.0:0"]` (reachable from the LAN, which is the point).
        public var listen: [String]
        /// Also browse and resolve IPv6 services (link-local ones are dialled with a
        /// `%interface` scope). Key `ipv6`; default `true`.
        public var ipv6: Bool
        /// When no avahi-daemon is on the system bus at start: `true` waits for one (one log
        /// line, discovery starts when it appears), `false` makes `start` throw
        /// `.transportUnavailable`. Key `wait_for_daemon`; default `true`.
        public var waitForDaemon: Bool
        /// How often to retry when not even the D-Bus system bus answers, in milliseconds.
        /// Must be 100...600000. Key `retry_interval_ms`; default 2000.
        public var retryIntervalMilliseconds: Int
        /// Largest frame a link carries (the link MTU): 16...65535.
        /// Key `max_frame_size`; default 65535.
        public var maxFrameSize: Int
        /// How long a dial waits for the TCP connection, in milliseconds: 1...600000.
        /// Key `connect_timeout_ms`; default 5000.
        public var connectTimeoutMilliseconds: Int

        /// The default service type, `_scmesh._tcp`.
        public static let defaultServiceType = "_scmesh._tcp"
        /// The default listen address, `0.0.0.0:0`.
        public static let defaultListen = ["0.0.0.0:0"]

        /// Every key a configuration file may use in this section.
        public static let keys: [String] = CodingKeys.allCases.map(\.rawValue)

        /// Creates a configuration; every parameter has the documented default.
        public init(
            discoveryMode: DiscoveryMode = .normal,
            serviceType: String = Configuration.defaultServiceType,
            serviceName: String = "",
            interfaces: [String] = [],
            listen: [String] = Configuration.defaultListen,
            ipv6: Bool = true,
            waitForDaemon: Bool = true,
            retryIntervalMilliseconds: Int = 2000,
            maxFrameSize: Int = 65535,
            connectTimeoutMilliseconds: Int = 5000
        ) {
            self.discoveryMode = discoveryMode
            self.serviceType = serviceType
            self.serviceName = serviceName
            self.interfaces = interfaces
            self.listen = listen
            self.ipv6 = ipv6
            self.waitForDaemon = waitForDaemon
            self.retryIntervalMilliseconds = retryIntervalMilliseconds
            self.maxFrameSize = maxFrameSize
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case discoveryMode = "discovery_mode"
            case serviceType = "service_type"
            case serviceName = "service_name"
            case interfaces
            case listen
            case ipv6
            case waitForDaemon = "wait_for_daemon"
            case retryIntervalMilliseconds = "retry_interval_ms"
            case maxFrameSize = "max_frame_size"
            case connectTimeoutMilliseconds = "connect_timeout_ms"
        }

        /// Decodes a configuration; missing keys take their defaults.
        /// - Throws: `DecodingError.dataCorrupted` naming the key when the section holds a
        ///   key not in ``keys``; the usual `DecodingError` (with the key in its coding path)
        ///   for a value of the wrong type or an unknown `discovery_mode`. Ranges are
        ///   checked by ``validate()``.
        public init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(CodingKeys.self, section: "mDNS transport")
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Configuration()
            discoveryMode = try c.decodeIfPresent(DiscoveryMode.self, forKey: .discoveryMode) ?? d.discoveryMode
            serviceType = try c.decodeIfPresent(String.self, forKey: .serviceType) ?? d.serviceType
            serviceName = try c.decodeIfPresent(String.self, forKey: .serviceName) ?? d.serviceName
            interfaces = try c.decodeIfPresent([String].self, forKey: .interfaces) ?? d.interfaces
            listen = try c.decodeIfPresent([String].self, forKey: .listen) ?? d.listen
            ipv6 = try c.decodeIfPresent(Bool.self, forKey: .ipv6) ?? d.ipv6
            waitForDaemon = try c.decodeIfPresent(Bool.self, forKey: .waitForDaemon) ?? d.waitForDaemon
            retryIntervalMilliseconds =
                try c.decodeIfPresent(Int.self, forKey: .retryIntervalMilliseconds) ?? d.retryIntervalMilliseconds
            maxFrameSize = try c.decodeIfPresent(Int.self, forKey: .maxFrameSize) ?? d.maxFrameSize
            connectTimeoutMilliseconds =
                try c.decodeIfPresent(Int.self, forKey: .connectTimeoutMilliseconds) ?? d.connectTimeoutMilliseconds
        }

        /// Checks every value and names the first bad key.
        ///
        /// - Throws: ``MeshError`` `.invalidConfiguration` whose message names the key, e.g.
        ///   `mdns.service_type must look like "_name._tcp", got "scmesh"`.
        public func validate() throws {
            guard Self.isServiceType(serviceType) else {
                throw Self.invalid(
                    .serviceType,
                    "must look like \"_name._tcp\" (name: 1-15 letters, digits or '-'), got \"\(serviceType)\""
                )
            }
            guard serviceName.utf8.count <= 63 else {
                throw Self.invalid(.serviceName, "must be at most 63 bytes, got \(serviceName.utf8.count)")
            }
            for name in interfaces
            where name.isEmpty || name.utf8.count > 15 || name.contains("/") || name.contains(" ") {
                throw Self.invalid(
                    .interfaces,
                    "entry \"\(name)\" is not an interface name (1-15 characters, no '/' or space)"
                )
            }
            guard !listen.isEmpty else {
                throw Self.invalid(.listen, "must name at least one address: its port is what mDNS publishes")
            }
            guard (100...600_000).contains(retryIntervalMilliseconds) else {
                throw Self.invalid(.retryIntervalMilliseconds, "must be 100...600000, got \(retryIntervalMilliseconds)")
            }
            guard (16...65535).contains(maxFrameSize) else {
                throw Self.invalid(.maxFrameSize, "must be 16...65535, got \(maxFrameSize)")
            }
            guard (1...600_000).contains(connectTimeoutMilliseconds) else {
                throw Self.invalid(.connectTimeoutMilliseconds, "must be 1...600000, got \(connectTimeoutMilliseconds)")
            }
        }

        static func isServiceType(_ type: String) -> Bool {
            let parts = type.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, parts[1] == "_tcp", parts[0].hasPrefix("_") else { return false }
            let name = parts[0].dropFirst()
            guard (1...15).contains(name.count), name.first != "-", name.last != "-" else { return false }
            return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }

        static func invalid(_ key: CodingKeys, _ message: String) -> MeshError {
            MeshError(.invalidConfiguration, "mdns.\(key.rawValue) \(message)")
        }
    }
}
