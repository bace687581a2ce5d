/// Decides whether this node forwards one topic message to its mesh peers: the hook
/// where topic traffic counts against the relay budget (`relay.max_per_hour`) like
/// any relayed traffic. Asked once per message this node would pass on (never for its
/// own publications); a refused message is still delivered to this node's inbox when
/// it is subscribed, and stays in the cache for IWANT, but is not pushed further.
public protocol TopicRelayAdmission: Sendable {
    /// Whether to forward `bytes` bytes of a message on `topic` from `origin` that
    /// arrived from neighbour `from`, to `recipients` neighbours.
    func admitTopicRelay(topic: String, origin: PeerID, from neighbour: PeerID, bytes: Int, recipients: Int) -> Bool
}

/// Admits every topic message: the default until a relay budget is wired in.
public struct AdmitEveryTopicRelay: TopicRelayAdmission {
    /// Creates the admission.
    public init() {}

    public func admitTopicRelay(
        topic: String,
        origin: PeerID,
        from neighbour: PeerID,
        bytes: Int,
        recipients: Int
    ) -> Bool {
        true
    }
}
