extension Router {
    /// Subscribes this node to `topic`: its messages land in the message sink (the
    /// inbox) with ``InboundMessage/topic`` set, and neighbours are told. Kept across
    /// restarts by the ``TopicStore``.
    /// - Throws: ``MeshError`` `.invalidArgument` for a malformed topic name, or the
    ///   store's error.
    public func subscribe(to topic: String) async throws {
        try await gossip.subscribe(topic)
    }

    /// Unsubscribes this node from `topic` (also a default topic: the choice is kept).
    /// The node may still relay the topic for subscribers further away, but its
    /// messages no longer land in the inbox.
    /// - Throws: ``MeshError`` `.invalidArgument` for a malformed topic name, or the
    ///   store's error.
    public func unsubscribe(from topic: String) async throws {
        try await gossip.unsubscribe(topic)
    }

    /// Publishes `payload` on `topic`: signed with this node's identity and pushed to
    /// the topic mesh (or, when this node takes no part in the topic, to up to D
    /// neighbours that do). Not delivered to this node's own inbox. Needs no
    /// subscription.
    /// - Returns: the message's ID.
    /// - Throws: ``MeshError``: `.invalidArgument` (topic name), `.messageTooLarge`
    ///   (over 60,000 bytes), `.relayDisabled`, `.notRunning` (no identity signer).
    @discardableResult
    public func publish(_ payload: [UInt8], to topic: String) async throws -> MessageID {
        try await gossip.publish(payload, to: topic)
    }

    /// Every topic this node knows of (subscribed, relayed, or announced by a
    /// neighbour), by name.
    public func topics() async -> [TopicSnapshot] {
        gossip.snapshot()
    }
}
