extension RouterConfiguration {
    /// The default ``maxMessageSize``: 16 MiB (the wire decoder's default limit too).
    public static let defaultMaxMessageSize = 16 << 20

    /// The largest ``maxMessageSize`` the wire format allows: 65,535 chunks (the
    /// chunk count is a 16-bit field) of `Frame.chunkSize` bytes.
    public static let largestMessageSize = Int(UInt16.max) * Frame.chunkSize

    enum CodingKeys: String, CodingKey, CaseIterable {
        case relay
        case escalation
        case reconnect
        case keepaliveIntervalMs = "keepalive_interval_ms"
        case linkWriteStallTimeoutMs = "link_write_stall_timeout_ms"
        case handshakeTimeoutMs = "handshake_timeout_ms"
        case maxUnauthenticatedLinks = "max_unauthenticated_links"
        case sealing
        case maxMessageSize = "max_message_size"
        case reassembly
        case dedupCapacity = "dedup_capacity"
        case windowPerLink = "window_per_link"
        case inboxCapacity = "inbox_capacity"
        case defaultTTL = "default_ttl"
        case routing
        case flood
        case features
    }

    /// `features:` — one boolean per optional feature; a missing key is on.
    private struct Features: Codable {
        var set: Capabilities

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(_ set: Capabilities) { self.set = set }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            let known = Set(Capabilities.named.map(\.name))
            for key in container.allKeys where !known.contains(key.stringValue) {
                throw DecodingError.dataCorruptedError(
                    forKey: key,
                    in: container,
                    debugDescription:
                        "unknown feature \"\(key.stringValue)\"; the features are \(Capabilities.named.map(\.name).joined(separator: ", "))"
                )
            }
            var set = Capabilities.all
            for (name, feature) in Capabilities.named {
                if try container.decode(Bool.self, forKey: Key(stringValue: name), default: true) == false {
                    set.remove(feature)
                }
            }
            self.set = set
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for (name, feature) in Capabilities.named {
                try container.encode(set.contains(feature), forKey: Key(stringValue: name))
            }
        }
    }

    /// `relay:` — the switch and the budgets.
    private struct Relay: Codable {
        var enabled: Bool
        var limits: RelayLimits

        enum CodingKeys: String, CodingKey, CaseIterable {
            case enabled
            case maxPerHour = "max_per_hour"
            case neighbourShare = "neighbour_share"
            case batteryFloorPercent = "battery_floor_percent"
        }

        init(enabled: Bool, limits: RelayLimits) {
            self.enabled = enabled
            self.limits = limits
        }

        init(from decoder: any Decoder) throws {
            try decoder.rejectUnknownKeys(CodingKeys.self, section: "relay")
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let defaults = RouterConfiguration()
            enabled = try container.decode(Bool.self, forKey: .enabled, default: defaults.relayEnabled)
            var limits = defaults.relayLimits
            limits.maxPerHour = try container.decode(Int.self, forKey: .maxPerHour, default: limits.maxPerHour)
            try container.check(
                limits.maxPerHour >= 0,
                .maxPerHour,
                "must be 0 (no limit) or more, got \(limits.maxPerHour)"
            )
            limits.neighbourShare = try container.decode(
                Double.self,
                forKey: .neighbourShare,
                default: limits.neighbourShare
            )
            try container.check(
                limits.neighbourShare > 0 && limits.neighbourShare <= 1,
                .neighbourShare,
                "must be above 0 and at most 1, got \(limits.neighbourShare)"
            )
            limits.batteryFloorPercent = try container.decode(
                Int.self,
                forKey: .batteryFloorPercent,
                default: limits.batteryFloorPercent
            )
            try container.check(
                (0...100).contains(limits.batteryFloorPercent),
                .batteryFloorPercent,
                "must be between 0 (never) and 100, got \(limits.batteryFloorPercent)"
            )
            self.limits = limits
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(enabled, forKey: .enabled)
            try container.encode(limits.maxPerHour, forKey: .maxPerHour)
            try container.encode(limits.neighbourShare, forKey: .neighbourShare)
            try container.encode(limits.batteryFloorPercent, forKey: .batteryFloorPercent)
        }
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self, section: "router")
        let defaults = Self()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let relay = try container.decode(
            Relay.self,
            forKey: .relay,
            default: Relay(enabled: defaults.relayEnabled, limits: defaults.relayLimits)
        )
        relayEnabled = relay.enabled
        relayLimits = relay.limits
        escalation = try container.decode(
            EscalationConfiguration.self,
            forKey: .escalation,
            default: defaults.escalation
        )
        reconnect = try container.decode(ReconnectConfiguration.self, forKey: .reconnect, default: defaults.reconnect)
        let keepaliveMs = try container.decode(
            Int.self,
            forKey: .keepaliveIntervalMs,
            default: defaults.keepaliveInterval.wholeMilliseconds
        )
        try container.check(keepaliveMs >= 1, .keepaliveIntervalMs, "must be at least 1, got \(keepaliveMs)")
        keepaliveInterval = .milliseconds(keepaliveMs)
        let stallMs = try container.decode(
            Int.self,
            forKey: .linkWriteStallTimeoutMs,
            default: defaults.linkWriteStallTimeout.wholeMilliseconds
        )
        try container.check(stallMs >= 1, .linkWriteStallTimeoutMs, "must be at least 1, got \(stallMs)")
        linkWriteStallTimeout = .milliseconds(stallMs)
        let handshakeMs = try container.decode(
            Int.self,
            forKey: .handshakeTimeoutMs,
            default: defaults.handshakeTimeout.wholeMilliseconds
        )
        try container.check(handshakeMs >= 1, .handshakeTimeoutMs, "must be at least 1, got \(handshakeMs)")
        handshakeTimeout = .milliseconds(handshakeMs)
        maxUnauthenticatedLinks = try container.decode(
            Int.self,
            forKey: .maxUnauthenticatedLinks,
            default: defaults.maxUnauthenticatedLinks
        )
        try container.check(
            maxUnauthenticatedLinks >= 1,
            .maxUnauthenticatedLinks,
            "must be at least 1, got \(maxUnauthenticatedLinks)"
        )
        sealing = try container.decode(SealingPolicy.self, forKey: .sealing, default: defaults.sealing)
        maxMessageSize = try container.decode(Int.self, forKey: .maxMessageSize, default: defaults.maxMessageSize)
        try container.check(
            (1...Self.largestMessageSize).contains(maxMessageSize),
            .maxMessageSize,
            "must be between 1 and \(Self.largestMessageSize), got \(maxMessageSize)"
        )
        reassembly = try container.decode(ReassemblyLimits.self, forKey: .reassembly, default: defaults.reassembly)
        dedupCapacity = try container.decode(Int.self, forKey: .dedupCapacity, default: defaults.dedupCapacity)
        try container.check(dedupCapacity >= 1, .dedupCapacity, "must be at least 1, got \(dedupCapacity)")
        windowPerLink = try container.decode(Int.self, forKey: .windowPerLink, default: defaults.windowPerLink)
        try container.check(windowPerLink >= 1, .windowPerLink, "must be at least 1, got \(windowPerLink)")
        inboxCapacity = try container.decode(Int.self, forKey: .inboxCapacity, default: defaults.inboxCapacity)
        try container.check(inboxCapacity >= 1, .inboxCapacity, "must be at least 1, got \(inboxCapacity)")
        let ttl = try container.decode(Int.self, forKey: .defaultTTL, default: Int(defaults.defaultTTL))
        try container.check((1...255).contains(ttl), .defaultTTL, "must be between 1 and 255, got \(ttl)")
        defaultTTL = UInt8(ttl)
        routing = try container.decode(RoutingConfiguration.self, forKey: .routing, default: defaults.routing)
        flood = try container.decode(FloodConfiguration.self, forKey: .flood, default: defaults.flood)
        features = try container.decode(Features.self, forKey: .features, default: Features(defaults.features)).set
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Relay(enabled: relayEnabled, limits: relayLimits), forKey: .relay)
        try container.encode(escalation, forKey: .escalation)
        try container.encode(reconnect, forKey: .reconnect)
        try container.encode(keepaliveInterval.wholeMilliseconds, forKey: .keepaliveIntervalMs)
        try container.encode(linkWriteStallTimeout.wholeMilliseconds, forKey: .linkWriteStallTimeoutMs)
        try container.encode(handshakeTimeout.wholeMilliseconds, forKey: .handshakeTimeoutMs)
        try container.encode(maxUnauthenticatedLinks, forKey: .maxUnauthenticatedLinks)
        try container.encode(sealing, forKey: .sealing)
        try container.encode(maxMessageSize, forKey: .maxMessageSize)
        try container.encode(reassembly, forKey: .reassembly)
        try container.encode(dedupCapacity, forKey: .dedupCapacity)
        try container.encode(windowPerLink, forKey: .windowPerLink)
        try container.encode(inboxCapacity, forKey: .inboxCapacity)
        try container.encode(Int(defaultTTL), forKey: .defaultTTL)
        try container.encode(routing, forKey: .routing)
        try container.encode(flood, forKey: .flood)
        try container.encode(Features(features), forKey: .features)
    }
}

// MARK: Decoding helpers for the configuration types

extension KeyedDecodingContainer {
    /// The value at `key`, or `defaultValue` when the key is absent. A key that is
    /// present holds a value of the type: `null` or another type is an error.
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key, default defaultValue: T) throws -> T {
        contains(key) ? try decode(type, forKey: key) : defaultValue
    }

    /// Throws a `dataCorrupted` error whose coding path ends with `key` unless
    /// `condition` holds.
    func check(_ condition: Bool, _ key: Key, _ message: @autoclosure () -> String) throws {
        if !condition {
            throw DecodingError.dataCorruptedError(forKey: key, in: self, debugDescription: message())
        }
    }
}

extension Duration {
    /// Whole milliseconds (rounded down), as the configuration's `*_ms` keys hold them.
    public var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
