import Logging
import MeshCore

/// A node's whole configuration, as read from `Config/node.yaml`, the environment
/// and `--set` flags (see ``load(file:environment:overrides:registry:)`` and the
/// config reference, docs/configuration.md).
///
/// Values that are not set anywhere take the built-in defaults below. One of them is
/// deliberately strict: `relay.enabled` missing counts as off (fail-safe, as in the
/// seed app), so the shipped `Config/node.yaml` sets it to `true`.
public struct NodeConfiguration: Sendable {
    /// `node:` — who the node is and how it logs.
    public struct NodeSettings: Sendable, Codable, Hashable {
        /// A display name (`null` = none).
        public var name: String?
        /// The log level: trace, debug, info, notice, warning, error or critical.
        public var logLevel: Logger.Level = .info
        /// Control-socket connections served at once; one more is answered with an
        /// error and closed.
        public var controlMaxConnections: Int = 64
        /// How long the node waits for a control client to take a reply (it never
        /// reads: its socket buffer is full) before it drops the client.
        public var controlWriteTimeoutMs: Int = 10_000
        /// Where the log goes: `null` = standard error (in the journald format when
        /// standard error is the journal); a path = appended to that file (relative
        /// paths are relative to the data directory; created with mode 0600).
        public var logFile: String?

        /// Built-in defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case name
            case logLevel = "log_level"
            case controlMaxConnections = "control_max_connections"
            case controlWriteTimeoutMs = "control_write_timeout_ms"
            case logFile = "log_file"
        }

        /// Decodes and checks every key; a bad value names its key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            let level = try container.decode(String.self, forKey: .logLevel)
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .logLevel,
                    in: container,
                    debugDescription:
                        "expected one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(level)\""
                )
            }
            logLevel = parsed
            controlMaxConnections = try container.decode(Int.self, forKey: .controlMaxConnections)
            try require(
                (1...100_000).contains(controlMaxConnections),
                .controlMaxConnections,
                in: container,
                "must be 1 to 100000, got \(controlMaxConnections)"
            )
            controlWriteTimeoutMs = try container.decode(Int.self, forKey: .controlWriteTimeoutMs)
            try require(
                (1...3_600_000).contains(controlWriteTimeoutMs),
                .controlWriteTimeoutMs,
                in: container,
                "must be 1 to 3600000, got \(controlWriteTimeoutMs)"
            )
            logFile = try container.decodeIfPresent(String.self, forKey: .logFile)
            try require(
                logFile.map { !$0.isEmpty } ?? true,
                .logFile,
                in: container,
                "must be a file path or null, got \"\""
            )
        }

        /// Encodes every key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(logLevel.rawValue, forKey: .logLevel)
            try container.encode(controlMaxConnections, forKey: .controlMaxConnections)
            try container.encode(controlWriteTimeoutMs, forKey: .controlWriteTimeoutMs)
            try container.encode(logFile, forKey: .logFile)
        }
    }

    /// `relay:` — relay = messaging: one switch. A view of
    /// ``routerConfiguration``'s `relayEnabled`.
    public struct RelaySettings: Sendable, Codable, Hashable {
        /// When false the node neither sends nor receives. Missing counts as false.
        public var enabled: Bool = false

        /// Built-in defaults (relay off).
        public init() {}

        /// Relay on or off.
        public init(enabled: Bool) {
            self.enabled = enabled
        }
    }

    /// One `transports.<name>:` section.
    public struct TransportSettings: Sendable {
        /// Whether the node starts this transport.
        public var enabled: Bool
        /// Its priority: lower is preferred.
        public var priority: Int
        /// The transport's own keys, decoded by its ``TransportFactory/configurationType``.
        public var configuration: any TransportConfiguration

        /// Creates a section.
        public init(enabled: Bool, priority: Int, configuration: any TransportConfiguration) {
            self.enabled = enabled
            self.priority = priority
            self.configuration = configuration
        }

        /// The transport's settings as their concrete type, or nil for another type.
        public func configuration<C: TransportConfiguration>(as type: C.Type) -> C? {
            configuration as? C
        }
    }

    /// `node:`
    public var node = NodeSettings()
    /// `store:` — the SQLite store's file, bounds and retention.
    public var store = StoreSettings()
    /// `topics:` — default subscriptions and gossip settings.
    public var topics = TopicSettings()
    /// `http:` — the local HTTP API (off unless the config turns it on).
    public var http = HTTPSettings()
    /// `power:` — the power state's source and the power profile's switch.
    public var power = PowerSettings()
    /// `notify:` — a command and desktop notifications for each received message.
    public var notify = NotifySettings()
    /// `messages:` — read receipts.
    public var messages = MessagesSettings()
    /// `transports:`, keyed by transport name. Every registered transport has a
    /// section (disabled unless the config enables it).
    public var transports: [String: TransportSettings]
    /// Every other top-level key (`relay`, `escalation`, `reconnect`,
    /// `keepalive_interval_ms`, `handshake_timeout_ms`, `sealing`, ...): the router's
    /// own configuration type, decoded from the file as it is (its `Codable` keys are
    /// the config keys). The node's one difference is fail-safe relay: `relay.enabled`
    /// missing counts as off.
    public var routerConfiguration = RouterConfiguration(relayEnabled: false)

    /// `relay:` (``routerConfiguration``'s `relayEnabled`).
    public var relay: RelaySettings {
        get { RelaySettings(enabled: routerConfiguration.relayEnabled) }
        set { routerConfiguration.relayEnabled = newValue.enabled }
    }
    /// `escalation:` (``routerConfiguration``'s `escalation`).
    public var escalation: EscalationConfiguration {
        get { routerConfiguration.escalation }
        set { routerConfiguration.escalation = newValue }
    }
    /// `reconnect:` (``routerConfiguration``'s `reconnect`).
    public var reconnect: ReconnectConfiguration {
        get { routerConfiguration.reconnect }
        set { routerConfiguration.reconnect = newValue }
    }
    /// `keepalive_interval_ms`: idle links are pinged this often; three silent intervals close a link.
    public var keepaliveIntervalMs: Int {
        get { routerConfiguration.keepaliveInterval.milliseconds }
        set { routerConfiguration.keepaliveInterval = .milliseconds(newValue) }
    }
    /// `handshake_timeout_ms`: how long a new link may take to complete its handshake
    /// before it is closed (a peer that connects and goes silent is dropped after this).
    public var handshakeTimeoutMs: Int {
        get { routerConfiguration.handshakeTimeout.milliseconds }
        set { routerConfiguration.handshakeTimeout = .milliseconds(newValue) }
    }

    /// The built-in defaults: every transport of `registry` present but disabled, at
    /// its default priority with its default settings; relay off.
    public init(defaultsFor registry: TransportRegistry = .current) {
        var transports: [String: TransportSettings] = [:]
        for factory in registry.all {
            transports[factory.name] = TransportSettings(
                enabled: false,
                priority: factory.defaultPriority,
                configuration: factory.defaultConfiguration()
            )
        }
        self.transports = transports
    }

    /// The enabled transports, best priority first (then by name).
    public var enabledTransports: [(name: String, settings: TransportSettings)] {
        transports.filter(\.value.enabled)
            .map { (name: $0.key, settings: $0.value) }
            .sorted { ($0.settings.priority, $0.name) < ($1.settings.priority, $1.name) }
    }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    var milliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}

/// Throws a `dataCorrupted` error naming `key` unless `condition` holds.
func require<Key: CodingKey>(
    _ condition: Bool,
    _ key: Key,
    in container: KeyedDecodingContainer<Key>,
    _ message: @autoclosure () -> String
) throws {
    if !condition {
        throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: message())
    }
}
