import MeshCore

extension NodeConfiguration {
    /// `topics:` — topic publish/subscribe (gossip, `docs/PROTOCOL.md` §A.7): the
    /// topics subscribed by default and the gossip's main knobs. Maps onto MeshCore's
    /// ``TopicConfiguration`` (``topicConfiguration``).
    public struct TopicSettings: Sendable, Codable, Hashable {
        /// Topics subscribed unless the user unsubscribed them (`scmesh unsubscribe`).
        public var defaultTopics: [String] = TopicConfiguration.seedTopics
        /// Hops a message this node publishes may take.
        public var ttl: Int = 64
        /// Seconds a message this node publishes lives.
        public var lifetimeSeconds: Int = 3600
        /// Mesh peers per topic the node aims for (gossipsub's D).
        public var meshDegree: Int = 6
        /// Milliseconds between heartbeats (mesh upkeep, IHAVE gossip).
        public var heartbeatIntervalMs: Int = 1000
        /// Messages a second one origin may publish on one topic (after the burst); a
        /// neighbour publishing more is pruned.
        public var peerRate: Double = 50
        /// Messages one origin may publish on one topic at once.
        public var peerBurst: Int = 200

        /// Built-in defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case defaultTopics = "default"
            case ttl
            case lifetimeSeconds = "lifetime_seconds"
            case meshDegree = "mesh_degree"
            case heartbeatIntervalMs = "heartbeat_interval_ms"
            case peerRate = "peer_rate"
            case peerBurst = "peer_burst"
        }

        /// Decodes and checks every key; a bad value names its key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            defaultTopics = try container.decode([String].self, forKey: .defaultTopics)
            for topic in defaultTopics {
                if let problem = TopicName.problem(with: topic) {
                    try require(false, .defaultTopics, in: container, problem)
                }
            }
            func ranged(_ key: CodingKeys, _ range: ClosedRange<Int>) throws -> Int {
                let value = try container.decode(Int.self, forKey: key)
                try require(
                    range.contains(value),
                    key,
                    in: container,
                    "must be \(range.lowerBound) to \(range.upperBound), got \(value)"
                )
                return value
            }
            ttl = try ranged(.ttl, 1...255)
            lifetimeSeconds = try ranged(.lifetimeSeconds, 1...(30 * 86_400))
            meshDegree = try ranged(.meshDegree, 1...64)
            heartbeatIntervalMs = try ranged(.heartbeatIntervalMs, 10...600_000)
            peerRate = try container.decode(Double.self, forKey: .peerRate)
            try require(peerRate > 0, .peerRate, in: container, "must be above 0 (messages a second), got \(peerRate)")
            peerBurst = try ranged(.peerBurst, 1...1_000_000)
        }

        /// Encodes every key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(defaultTopics, forKey: .defaultTopics)
            try container.encode(ttl, forKey: .ttl)
            try container.encode(lifetimeSeconds, forKey: .lifetimeSeconds)
            try container.encode(meshDegree, forKey: .meshDegree)
            try container.encode(heartbeatIntervalMs, forKey: .heartbeatIntervalMs)
            try container.encode(peerRate, forKey: .peerRate)
            try container.encode(peerBurst, forKey: .peerBurst)
        }

        /// The same settings as MeshCore's configuration (D_low and D_high follow D:
        /// min(4, D) and max(12, 2·D)).
        public var topicConfiguration: TopicConfiguration {
            TopicConfiguration(
                defaultTopics: defaultTopics,
                meshDegree: meshDegree,
                meshDegreeLow: min(4, meshDegree),
                meshDegreeHigh: max(12, 2 * meshDegree),
                heartbeatInterval: .milliseconds(heartbeatIntervalMs),
                ttl: UInt8(ttl),
                lifetimeSeconds: UInt32(lifetimeSeconds),
                peerRate: peerRate,
                peerBurst: peerBurst
            )
        }
    }
}
