/// A message that arrived for this node.
public struct InboundMessage: Sendable, Hashable, Codable {
    /// The message's ID.
    public var id: MessageID
    /// The node that created it.
    public var from: PeerID
    /// Its bytes.
    public var payload: [UInt8]
    /// The transport its last chunk arrived on.
    public var transport: String
    /// The topic it was published on, or nil for a direct message.
    public var topic: String?

    /// Creates a message record.
    public init(id: MessageID, from: PeerID, payload: [UInt8], transport: String, topic: String? = nil) {
        self.id = id
        self.from = from
        self.payload = payload
        self.transport = transport
        self.topic = topic
    }
}

