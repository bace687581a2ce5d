/// How ``Router/send(to:payload:options:)`` queues a message.
public struct SendOptions: Sendable, Hashable {
    /// The message's ID; nil for a new random one. Sending again with the ID of a
    /// message that is queued, sent or delivered changes nothing and returns the same
    /// ID (a retry after a timeout cannot make a duplicate); one that failed or expired
    /// is queued again.
    public var id: MessageID?
    /// How long the message may wait for delivery before it is marked
    /// ``MessageStatus/expired``; nil for the outbound queue's default.
    public var expiresAfter: Duration?
    /// Sends it as an emergency (docs/PROTOCOL.md §A.10): flooded whatever the routes,
    /// ahead of every queue, within `flood.emergency_per_hour`; above that limit
    /// ``Router/send(to:payload:options:)`` throws `.rateLimited` and queues nothing.
    public var emergency: Bool

    /// Creates options; the defaults queue a new, ordinary message with the queue's
    /// expiry.
    public init(id: MessageID? = nil, expiresAfter: Duration? = nil, emergency: Bool = false) {
        self.id = id
        self.expiresAfter = expiresAfter
        self.emergency = emergency
    }
}
