import MeshCore

/// The reply to `send`.
public struct SendReply: Codable, Sendable, Hashable {
    /// The message's ID (pass it as `id` to retry without making a duplicate).
    public var messageID: MessageID
    /// The destination.
    public var peer: PeerID
    /// The destination's alias, when it is a contact.
    public var alias: String?
    /// Payload bytes queued.
    public var bytes: Int
    /// Where the message is: `queued` (the usual answer without `wait`), `sent`, or
    /// `delivered` (with `wait`, or a retry of a message that arrived already).
    public var status: MessageStatus
    /// The transport of the hop that took it, once sent.
    public var transport: String?
    /// With `wait`: seconds from the request to the receipt.
    public var waitedSeconds: Double?
    /// Something the sender should know although the message was queued: the
    /// destination is unknown to this node (not a contact, no route, never seen).
    public var warning: String?

    /// Creates a reply.
    public init(
        messageID: MessageID,
        peer: PeerID,
        alias: String? = nil,
        bytes: Int,
        status: MessageStatus,
        transport: String? = nil,
        waitedSeconds: Double? = nil,
        warning: String? = nil
    ) {
        self.messageID = messageID
        self.peer = peer
        self.alias = alias
        self.bytes = bytes
        self.status = status
        self.transport = transport
        self.waitedSeconds = waitedSeconds
        self.warning = warning
    }
}
