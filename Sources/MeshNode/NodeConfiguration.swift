import Logging
import MeshCore

/// A node's whole configuration, as read from `Config/node.yaml`, the environment
/// and `--set` flags (see ``load(file:environment:overrides:registry:)`` and the
/// README's config reference).
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
        /// Messages the in-memory inbox keeps; older ones are dropped first.
        public var inboxCapacity: Int = 10_000
        /// Payload bytes the in-memory inbox keeps; older messages are dropped first.
        public var inboxMaxBytes: Int = 256 << 20

        /// Built-in defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case name
            case logLevel = "log_level"
            case inboxCapacity = "inbox_capacity"
            case inboxMaxBytes = "inbox_max_bytes"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decodeIfPresent(String.self, forKey: .name)
            let level = try container.decode(String.self, forKey: .logLevel)
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .logLevel, in: container,
                    debugDescription: "expected one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), got \"\(level)\"")
            }
            logLevel = parsed
            inboxCapacity = try container.decode(Int.self, forKey: .inboxCapacity)
            guard inboxCapacity >= 1 else {
                throw DecodingError.dataCorruptedError(
                    forKey: .inboxCapacity, in: container, debugDescription: "must be at least 1, got \(inboxCapacity)")
            }
            inboxMaxBytes = try container.decode(Int.self, forKey: .inboxMaxBytes)
            try require(inboxMaxBytes >= 1, .inboxMaxBytes, in: container, "must be at least 1, got \(inboxMaxBytes)")
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(logLevel.rawValue, forKey: .logLevel)
            try container.encode(inboxCapacity, forKey: .inboxCapacity)
            try container.encode(inboxMaxBytes, forKey: .inboxMaxBytes)
        }
    }

    /// `relay:` — relay = messaging: one switch.
    public struct RelaySettings: Sendable, Codable, Hashable {
        /// When false the node neither sends nor receives. Missing counts as false.
        public var enabled: Bool = false

        /// Built-in defaults (relay off).
        public init() {}
    }

    /// `escalation:` — hop-ack timeouts and retry limits of the default routing policy.
    public struct EscalationSettings: Sendable, Codable, Hashable {
        /// Shortest hop-acknowledgement timeout, in milliseconds.
        public var ackTimeoutMinMs: Int
        /// Longest hop-acknowledgement timeout, in milliseconds.
        public var ackTimeoutMaxMs: Int
        /// The timeout is this many times the link's smoothed RTT, clamped to the bounds.
        public var rttMultiplier: Double
        /// How many links one frame is tried on before the send fails.
        public var maxAttempts: Int
        /// Consecutive failures after which a link ranks below every healthy link.
        public var degradeAfterFailures: Int

        /// The router's defaults.
        public init() {
            let defaults = EscalationConfiguration()
            ackTimeoutMinMs = defaults.ackTimeoutMin.milliseconds
            ackTimeoutMaxMs = defaults.ackTimeoutMax.milliseconds
            rttMultiplier = defaults.rttMultiplier
            maxAttempts = defaults.maxAttempts
            degradeAfterFailures = defaults.degradeAfterFailures
        }

        enum CodingKeys: String, CodingKey {
            case ackTimeoutMinMs = "ack_timeout_min_ms"
            case ackTimeoutMaxMs = "ack_timeout_max_ms"
            case rttMultiplier = "rtt_multiplier"
            case maxAttempts = "max_attempts"
            case degradeAfterFailures = "degrade_after_failures"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            ackTimeoutMinMs = try container.decode(Int.self, forKey: .ackTimeoutMinMs)
            ackTimeoutMaxMs = try container.decode(Int.self, forKey: .ackTimeoutMaxMs)
            rttMultiplier = try container.decode(Double.self, forKey: .rttMultiplier)
            maxAttempts = try container.decode(Int.self, forKey: .maxAttempts)
            degradeAfterFailures = try container.decode(Int.self, forKey: .degradeAfterFailures)
            try require(ackTimeoutMinMs >= 1, .ackTimeoutMinMs, in: container, "must be at least 1, got \(ackTimeoutMinMs)")
            try require(
                ackTimeoutMaxMs >= ackTimeoutMinMs, .ackTimeoutMaxMs, in: container,
                "must not be below ack_timeout_min_ms (\(ackTimeoutMinMs)), got \(ackTimeoutMaxMs)")
            try require(rttMultiplier > 0, .rttMultiplier, in: container, "must be above 0, got \(rttMultiplier)")
            try require(maxAttempts >= 1, .maxAttempts, in: container, "must be at least 1, got \(maxAttempts)")
            try require(
                degradeAfterFailures >= 1, .degradeAfterFailures, in: container,
                "must be at least 1, got \(degradeAfterFailures)")
        }
    }

    /// `reconnect:` — the redial schedule for hints whose link dropped.
    public struct ReconnectSettings: Sendable, Codable, Hashable {
        /// First delay after a failed dial or dropped link, in milliseconds.
        public var initialDelayMs: Int
        /// Longest delay (each failure doubles it up to this), in milliseconds.
        public var maxDelayMs: Int
        /// Random spread on each delay, as a fraction (0.2 = ±20 %).
        public var jitter: Double

        /// The router's defaults.
        public init() {
            let defaults = ReconnectConfiguration()
            initialDelayMs = defaults.initialDelay.milliseconds
            maxDelayMs = defaults.maxDelay.milliseconds
            jitter = defaults.jitter
        }

        enum CodingKeys: String, CodingKey {
            case initialDelayMs = "initial_delay_ms"
            case maxDelayMs = "max_delay_ms"
            case jitter
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            initialDelayMs = try container.decode(Int.self, forKey: .initialDelayMs)
            maxDelayMs = try container.decode(Int.self, forKey: .maxDelayMs)
            jitter = try container.decode(Double.self, forKey: .jitter)
            try require(initialDelayMs >= 1, .initialDelayMs, in: container, "must be at least 1, got \(initialDelayMs)")
            try require(
                maxDelayMs >= initialDelayMs, .maxDelayMs, in: container,
                "must not be below initial_delay_ms (\(initialDelayMs)), got \(maxDelayMs)")
            try require((0...1).contains(jitter), .jitter, in: container, "must be between 0 and 1, got \(jitter)")
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
    /// `relay:`
    public var relay = RelaySettings()
    /// `transports:`, keyed by transport name. Every registered transport has a
    /// section (disabled unless the config enables it).
    public var transports: [String: TransportSettings]
    /// `escalation:`
    public var escalation = EscalationSettings()
    /// `reconnect:`
    public var reconnect = ReconnectSettings()
    /// `keepalive_interval_ms`: idle links are pinged this often; three silent intervals close a link.
    public var keepaliveIntervalMs: Int = ReconnectSettings.keepaliveDefault
    /// `handshake_timeout_ms`: how long a new link may take to complete its handshake
    /// before it is closed (a peer that connects and goes silent is dropped after this).
    public var handshakeTimeoutMs: Int = ReconnectSettings.handshakeTimeoutDefault

    /// The built-in defaults: every transport of `registry` present but disabled, at
    /// its default priority with its default settings; relay off.
    public init(defaultsFor registry: TransportRegistry = .current) {
        var transports: [String: TransportSettings] = [:]
        for factory in registry.all {
            transports[factory.name] = TransportSettings(
                enabled: false, priority: factory.defaultPriority, configuration: factory.defaultConfiguration())
        }
        self.transports = transports
    }

    /// The enabled transports, best priority first (then by name).
    public var enabledTransports: [(name: String, settings: TransportSettings)] {
        transports.filter(\.value.enabled)
            .map { (name: $0.key, settings: $0.value) }
            .sorted { ($0.settings.priority, $0.name) < ($1.settings.priority, $1.name) }
    }

    /// The router configuration these settings describe.
    public var routerConfiguration: RouterConfiguration {
        var configuration = RouterConfiguration()
        configuration.relayEnabled = relay.enabled
        configuration.escalation.ackTimeoutMin = .milliseconds(escalation.ackTimeoutMinMs)
        configuration.escalation.ackTimeoutMax = .milliseconds(escalation.ackTimeoutMaxMs)
        configuration.escalation.rttMultiplier = escalation.rttMultiplier
        configuration.escalation.maxAttempts = escalation.maxAttempts
        configuration.escalation.degradeAfterFailures = escalation.degradeAfterFailures
        configuration.reconnect.initialDelay = .milliseconds(reconnect.initialDelayMs)
        configuration.reconnect.maxDelay = .milliseconds(reconnect.maxDelayMs)
        configuration.reconnect.jitter = reconnect.jitter
        configuration.keepaliveInterval = .milliseconds(keepaliveIntervalMs)
        configuration.handshakeTimeout = .milliseconds(handshakeTimeoutMs)
        return configuration
    }
}

extension NodeConfiguration.ReconnectSettings {
    static var keepaliveDefault: Int { RouterConfiguration().keepaliveInterval.milliseconds }
    static var handshakeTimeoutDefault: Int { RouterConfiguration().handshakeTimeout.milliseconds }
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
    _ condition: Bool, _ key: Key, in container: KeyedDecodingContainer<Key>, _ message: @autoclosure () -> String
) throws {
    if !condition {
        throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: message())
    }
}
