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
    /// Whether its origin sent it as an emergency (flooded ahead of every queue).
    public var emergency: Bool
    /// When its origin sealed it (milliseconds since 1970, UTC), as its envelope says;
    /// nil when it came unsealed over a direct link (sent then, or when it waited in
    /// the sender's outbox, unknown) or in an envelope with no time (format 1).
    public var sentMillis: UInt64?

    /// Creates a message record.
    public init(
        id: MessageID,
        from: PeerID,
        payload: [UInt8],
        transport: String,
        topic: String? = nil,
        emergency: Bool = false,
        sentMillis: UInt64? = nil
    ) {
        self.sentMillis = sentMillis
        self.id = id
        self.from = from
        self.payload = payload
        self.transport = transport
        self.topic = topic
        self.emergency = emergency
    }

    enum CodingKeys: String, CodingKey {
        case id, from, payload, transport, topic, emergency, sentMillis
    }

    /// Decodes a record; a missing `emergency` (records from before the flag) is false.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(MessageID.self, forKey: .id)
        from = try container.decode(PeerID.self, forKey: .from)
        payload = try container.decode([UInt8].self, forKey: .payload)
        transport = try container.decode(String.self, forKey: .transport)
        topic = try container.decodeIfPresent(String.self, forKey: .topic)
        emergency = try container.decodeIfPresent(Bool.self, forKey: .emergency) ?? false
        sentMillis = try container.decodeIfPresent(UInt64.self, forKey: .sentMillis)
    }
}
