import MeshCore

/// The bounds and retention times of a ``MeshStore``. The defaults suit a node with a
/// few thousand correspondents; every value can be changed per store.
public struct StoreConfiguration: Sendable, Hashable {
    /// Most messages the inbox keeps. Over it, the oldest message of the sender holding
    /// the most messages is dropped first (see ``StoreInbox``).
    public var inboxCapacity: Int = 10_000
    /// Most payload bytes the inbox keeps (256 MiB). Over it, the oldest message of the
    /// sender holding the most bytes is dropped first.
    public var inboxMaxBytes: Int = 256 << 20

    /// Most messages waiting in the outbox (queued, not yet sent) for all peers together.
    public var outboxMaxMessages: Int = 10_000
    /// Most payload bytes waiting in the outbox for all peers together (256 MiB).
    public var outboxMaxBytes: Int = 256 << 20
    /// Most messages waiting in the outbox for one peer.
    public var outboxMaxMessagesPerPeer: Int = 1_000
    /// Most payload bytes waiting in the outbox for one peer (64 MiB).
    public var outboxMaxBytesPerPeer: Int = 64 << 20

    /// Payloads of at least this many bytes wait in a file of their own beside the
    /// store file rather than in SQLite (64 KiB): written once and synced, instead of
    /// twice through the WAL (see ``StoreOutbox``). Smaller ones stay in their row.
    public var outboxFileThreshold: Int = 64 << 10
    /// Received payloads of at least this many bytes are kept in a file of their own
    /// beside the store file rather than in their inbox row (64 KiB), for the same
    /// reason (see ``StoreInbox``).
    public var inboxFileThreshold: Int = 64 << 10

    /// How long an outbound message may wait for delivery before
    /// ``StoreOutbox/expire(now:)`` marks it expired, unless it was enqueued with its
    /// own expiry (7 days).
    public var defaultExpiry: Duration = .seconds(7 * 86_400)
    /// How long a received message ID is remembered to drop later copies of it. It must
    /// cover the longest expiry a sender may use plus the clock skew between nodes
    /// (7 days + 1 day): a copy arriving after its ID was forgotten would be delivered
    /// again.
    public var dedupRetention: Duration = .seconds(8 * 86_400)
    /// Most history entries kept: ``MeshStore/maintain(now:)`` deletes the oldest
    /// finished entries (with their traces) beyond it. Pending messages are never
    /// deleted.
    public var historyLimit: Int = 100_000
    /// How long history entries are kept: ``MeshStore/maintain(now:)`` deletes finished
    /// entries created longer ago (90 days). Pending messages are never deleted.
    public var historyRetention: Duration = .seconds(90 * 86_400)

    /// The default configuration.
    public init() {}

    /// Checks that every bound is positive and that received IDs are remembered at least
    /// as long as a message may live.
    /// - Throws: ``MeshError`` with code `.invalidConfiguration` naming the first bad value.
    public func validate() throws(MeshError) {
        let counts: [(String, Int)] = [
            ("inboxCapacity", inboxCapacity), ("inboxMaxBytes", inboxMaxBytes),
            ("outboxMaxMessages", outboxMaxMessages), ("outboxMaxBytes", outboxMaxBytes),
            ("outboxMaxMessagesPerPeer", outboxMaxMessagesPerPeer), ("outboxMaxBytesPerPeer", outboxMaxBytesPerPeer),
            ("historyLimit", historyLimit), ("outboxFileThreshold", outboxFileThreshold),
            ("inboxFileThreshold", inboxFileThreshold),
        ]
        for (name, value) in counts where value < 1 {
            throw MeshError(.invalidConfiguration, "store configuration \(name) must be at least 1, got \(value)")
        }
        for (name, value) in [
            ("defaultExpiry", defaultExpiry), ("dedupRetention", dedupRetention),
            ("historyRetention", historyRetention),
        ] where value <= .zero {
            throw MeshError(.invalidConfiguration, "store configuration \(name) must be positive, got \(value)")
        }
        guard dedupRetention >= defaultExpiry else {
            throw MeshError(
                .invalidConfiguration,
                "store configuration dedupRetention (\(dedupRetention)) must be at least defaultExpiry (\(defaultExpiry)), plus the clock skew between nodes: a copy arriving after its ID was forgotten would be delivered twice"
            )
        }
    }
}
