import Synchronization

/// Where the topic gossip keeps what must survive a restart: the subscriptions and
/// the IDs of topic messages already seen (so a restarted node neither delivers nor
/// forwards an old message again). MeshStore implements it in SQLite.
public protocol TopicStore: Sendable {
    /// The topics the user subscribed (`true`) or explicitly unsubscribed (`false`).
    /// A default topic explicitly unsubscribed stays unsubscribed.
    func topicSubscriptions() async throws -> [String: Bool]
    /// Records that the user subscribed (`true`) or unsubscribed (`false`) `topic`.
    func setTopicSubscription(_ topic: String, subscribed: Bool) async throws
    /// The topic message IDs seen and not yet expired, with the time each has left.
    func seenTopicMessages() async throws -> [(MessageID, Duration)]
    /// Remembers a topic message ID for `remaining` (its lifetime left).
    func rememberTopicMessage(_ id: MessageID, for remaining: Duration) async throws
}

/// A ``TopicStore`` in memory: what a router without a durable store uses.
public final class InMemoryTopicStore: TopicStore {
    private struct State {
        var subscriptions: [String: Bool] = [:]
        var seen: [MessageID: Duration] = [:]
    }

    private let state = Mutex(State())

    /// Creates an empty store.
    public init() {}

    public func topicSubscriptions() async throws -> [String: Bool] { state.withLock { $0.subscriptions } }

    public func setTopicSubscription(_ topic: String, subscribed: Bool) async throws {
        state.withLock { $0.subscriptions[topic] = subscribed }
    }

    public func seenTopicMessages() async throws -> [(MessageID, Duration)] {
        state.withLock { $0.seen.map { ($0.key, $0.value) } }
    }

    public func rememberTopicMessage(_ id: MessageID, for remaining: Duration) async throws {
        state.withLock { $0.seen[id] = remaining }
    }
}
