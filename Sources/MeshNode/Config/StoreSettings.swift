import Foundation
import MeshCore
import MeshStore

extension NodeConfiguration {
    /// `store:` — where the node's SQLite store lives and what it keeps: the outbox's
    /// bounds and expiry, the inbox's bounds, how much history it remembers.
    ///
    /// Every key maps onto MeshStore's ``StoreConfiguration``
    /// (``storeConfiguration``); durations are whole seconds.
    public struct StoreSettings: Sendable, Codable, Hashable {
        /// The SQLite file; nil (`null`) for `DATA-DIR/store.sqlite`. A relative path is
        /// taken relative to the data directory.
        public var path: String?
        /// How long an outbound message may wait for delivery before it is marked
        /// `expired`, unless it was sent with its own expiry (`scmesh send --expires`).
        public var defaultExpirySeconds: Int = 7 * 86_400
        /// How long received message IDs are remembered to drop late copies; at least
        /// `default_expiry_seconds` (a copy arriving after its ID was forgotten would be
        /// delivered twice), plus the clock skew between nodes.
        public var dedupRetentionSeconds: Int = 8 * 86_400
        /// Most messages waiting in the outbox, for all peers together.
        public var outboxMaxMessages: Int = 10_000
        /// Most payload bytes waiting in the outbox, for all peers together.
        public var outboxMaxBytes: Int = 256 << 20
        /// Most messages waiting in the outbox for one peer.
        public var outboxMaxMessagesPerPeer: Int = 1_000
        /// Most payload bytes waiting in the outbox for one peer.
        public var outboxMaxBytesPerPeer: Int = 64 << 20
        /// Messages the persisted inbox keeps; over it, the oldest message of the sender
        /// holding the most is dropped first.
        public var inboxCapacity: Int = 10_000
        /// Payload bytes the persisted inbox keeps; over it, the oldest message of the
        /// sender holding the most bytes is dropped first.
        public var inboxMaxBytes: Int = 256 << 20
        /// Received payloads of at least this many bytes are kept in a file of their own
        /// beside the store (`store.sqlite-payloads/inbox-…`) rather than in SQLite.
        public var inboxFileThresholdBytes: Int = 64 << 10
        /// History entries kept (sent and received messages with their traces); the
        /// oldest finished ones beyond it are deleted by the periodic upkeep.
        public var historyLimit: Int = 100_000
        /// Days the history keeps a finished message (its text, status and trace); the
        /// periodic upkeep deletes older ones.
        public var historyDays: Int = 90
        /// Seconds between two runs of the store's upkeep (expiry, dedup pruning,
        /// history pruning).
        public var maintenanceIntervalSeconds: Int = 300

        /// Built-in defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case path
            case defaultExpirySeconds = "default_expiry_seconds"
            case dedupRetentionSeconds = "dedup_retention_seconds"
            case outboxMaxMessages = "outbox_max_messages"
            case outboxMaxBytes = "outbox_max_bytes"
            case outboxMaxMessagesPerPeer = "outbox_max_messages_per_peer"
            case outboxMaxBytesPerPeer = "outbox_max_bytes_per_peer"
            case inboxCapacity = "inbox_capacity"
            case inboxMaxBytes = "inbox_max_bytes"
            case inboxFileThresholdBytes = "inbox_file_threshold_bytes"
            case historyLimit = "history_limit"
            case historyDays = "history_days"
            case maintenanceIntervalSeconds = "maintenance_interval_seconds"
        }

        /// Decodes and checks every key (each bound at least 1, the dedup retention at
        /// least the expiry); a bad value names its key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            path = try container.decodeIfPresent(String.self, forKey: .path)
            if let path {
                try require(
                    !path.trimmingCharacters(in: .whitespaces).isEmpty,
                    .path,
                    in: container,
                    "must be a file path or null (for DATA-DIR/store.sqlite), got an empty string"
                )
            }
            func positive(_ key: CodingKeys) throws -> Int {
                let value = try container.decode(Int.self, forKey: key)
                try require(value >= 1, key, in: container, "must be at least 1, got \(value)")
                return value
            }
            defaultExpirySeconds = try positive(.defaultExpirySeconds)
            dedupRetentionSeconds = try positive(.dedupRetentionSeconds)
            try require(
                dedupRetentionSeconds >= defaultExpirySeconds,
                .dedupRetentionSeconds,
                in: container,
                "must be at least store.default_expiry_seconds (\(defaultExpirySeconds)), got \(dedupRetentionSeconds): a copy arriving after its ID was forgotten would be delivered twice"
            )
            outboxMaxMessages = try positive(.outboxMaxMessages)
            outboxMaxBytes = try positive(.outboxMaxBytes)
            outboxMaxMessagesPerPeer = try positive(.outboxMaxMessagesPerPeer)
            outboxMaxBytesPerPeer = try positive(.outboxMaxBytesPerPeer)
            inboxCapacity = try positive(.inboxCapacity)
            inboxMaxBytes = try positive(.inboxMaxBytes)
            inboxFileThresholdBytes = try positive(.inboxFileThresholdBytes)
            historyLimit = try positive(.historyLimit)
            historyDays = try container.decodeIfPresent(Int.self, forKey: .historyDays) ?? 90
            try require(
                historyDays >= 1,
                .historyDays,
                in: container,
                "must be the number of days the history keeps a message, at least 1, got \(historyDays)"
            )
            maintenanceIntervalSeconds = try positive(.maintenanceIntervalSeconds)
        }

        /// Encodes every key (`path` as null when unset).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(path, forKey: .path)
            try container.encode(defaultExpirySeconds, forKey: .defaultExpirySeconds)
            try container.encode(dedupRetentionSeconds, forKey: .dedupRetentionSeconds)
            try container.encode(outboxMaxMessages, forKey: .outboxMaxMessages)
            try container.encode(outboxMaxBytes, forKey: .outboxMaxBytes)
            try container.encode(outboxMaxMessagesPerPeer, forKey: .outboxMaxMessagesPerPeer)
            try container.encode(outboxMaxBytesPerPeer, forKey: .outboxMaxBytesPerPeer)
            try container.encode(inboxCapacity, forKey: .inboxCapacity)
            try container.encode(inboxMaxBytes, forKey: .inboxMaxBytes)
            try container.encode(inboxFileThresholdBytes, forKey: .inboxFileThresholdBytes)
            try container.encode(historyLimit, forKey: .historyLimit)
            try container.encode(historyDays, forKey: .historyDays)
            try container.encode(maintenanceIntervalSeconds, forKey: .maintenanceIntervalSeconds)
        }

        /// The store file for a node using `dataDirectory`.
        public func filePath(dataDirectory: String) -> String {
            guard let path else { return dataDirectory + "/store.sqlite" }
            return path.hasPrefix("/") ? path : dataDirectory + "/" + path
        }

        /// The same settings as MeshStore's configuration.
        public var storeConfiguration: StoreConfiguration {
            var configuration = StoreConfiguration()
            configuration.defaultExpiry = .seconds(defaultExpirySeconds)
            configuration.dedupRetention = .seconds(dedupRetentionSeconds)
            configuration.outboxMaxMessages = outboxMaxMessages
            configuration.outboxMaxBytes = outboxMaxBytes
            configuration.outboxMaxMessagesPerPeer = outboxMaxMessagesPerPeer
            configuration.outboxMaxBytesPerPeer = outboxMaxBytesPerPeer
            configuration.inboxCapacity = inboxCapacity
            configuration.inboxMaxBytes = inboxMaxBytes
            configuration.inboxFileThreshold = inboxFileThresholdBytes
            configuration.historyLimit = historyLimit
            configuration.historyRetention = .seconds(historyDays * 86_400)
            return configuration
        }
    }
}
