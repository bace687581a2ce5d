/// Limits on messages that arrive in several chunks.
///
/// `Codable` with the keys `max_messages`, `max_bytes`, `max_messages_per_peer`,
/// `max_bytes_per_peer` and `timeout_ms` (an integer, milliseconds). A missing key takes its default; an unknown key, a wrong type or a
/// value below 1 is a `DecodingError` whose coding path ends with the key.
public struct ReassemblyLimits: Sendable, Hashable, Codable {
    /// Messages being reassembled at once.
    public var maxMessages: Int
    /// Bytes held (chunks received) by all partial messages together.
    public var maxBytes: Int
    /// Messages being reassembled at once from one neighbour (the peer whose link
    /// brought them).
    public var maxMessagesPerPeer: Int
    /// Bytes held for partial messages from one neighbour; at least the largest
    /// message, or that message could never complete.
    public var maxBytesPerPeer: Int
    /// A partial message older than this is dropped.
    public var timeout: Duration

    /// Defaults: 256 messages and 64 MiB in all; 16 messages and 17 MiB (a whole
    /// 16 MiB message and change) per neighbour; 60 s.
    public init(
        maxMessages: Int = 256,
        maxBytes: Int = 64 << 20,
        maxMessagesPerPeer: Int = 16,
        maxBytesPerPeer: Int = 17 << 20,
        timeout: Duration = .seconds(60)
    ) {
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
        self.maxMessagesPerPeer = maxMessagesPerPeer
        self.maxBytesPerPeer = maxBytesPerPeer
        self.timeout = timeout
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case maxMessages = "max_messages"
        case maxBytes = "max_bytes"
        case maxMessagesPerPeer = "max_messages_per_peer"
        case maxBytesPerPeer = "max_bytes_per_peer"
        case timeoutMs = "timeout_ms"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self, section: "reassembly")
        let defaults = Self()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        maxMessages = try container.decode(Int.self, forKey: .maxMessages, default: defaults.maxMessages)
        maxBytes = try container.decode(Int.self, forKey: .maxBytes, default: defaults.maxBytes)
        maxMessagesPerPeer = try container.decode(
            Int.self,
            forKey: .maxMessagesPerPeer,
            default: defaults.maxMessagesPerPeer
        )
        maxBytesPerPeer = try container.decode(Int.self, forKey: .maxBytesPerPeer, default: defaults.maxBytesPerPeer)
        let timeoutMs = try container.decode(Int.self, forKey: .timeoutMs, default: defaults.timeout.wholeMilliseconds)
        try container.check(maxMessages >= 1, .maxMessages, "must be at least 1, got \(maxMessages)")
        try container.check(maxBytes >= 1, .maxBytes, "must be at least 1, got \(maxBytes)")
        try container.check(
            maxMessagesPerPeer >= 1,
            .maxMessagesPerPeer,
            "must be at least 1, got \(maxMessagesPerPeer)"
        )
        try container.check(maxBytesPerPeer >= 1, .maxBytesPerPeer, "must be at least 1, got \(maxBytesPerPeer)")
        try container.check(timeoutMs >= 1, .timeoutMs, "must be at least 1, got \(timeoutMs)")
        timeout = .milliseconds(timeoutMs)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(maxMessages, forKey: .maxMessages)
        try container.encode(maxBytes, forKey: .maxBytes)
        try container.encode(maxMessagesPerPeer, forKey: .maxMessagesPerPeer)
        try container.encode(maxBytesPerPeer, forKey: .maxBytesPerPeer)
        try container.encode(timeout.wholeMilliseconds, forKey: .timeoutMs)
    }
}
