/// Limits on messages that arrive in several chunks.
///
/// `Codable` with the keys `max_messages`, `max_bytes` and `timeout_ms` (an integer,
/// milliseconds). A missing key takes its default; an unknown key, a wrong type or a
/// value below 1 is a `DecodingError` whose coding path ends with the key.
public struct ReassemblyLimits: Sendable, Hashable, Codable {
    /// Messages being reassembled at once.
    public var maxMessages: Int
    /// Bytes reserved by all partial messages together.
    public var maxBytes: Int
    /// A partial message older than this is dropped.
    public var timeout: Duration

    /// Defaults: 64 messages, 64 MiB, 60 s.
    public init(maxMessages: Int = 64, maxBytes: Int = 64 << 20, timeout: Duration = .seconds(60)) {
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
        self.timeout = timeout
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case maxMessages = "max_messages"
        case maxBytes = "max_bytes"
        case timeoutMs = "timeout_ms"
    }

    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self, section: "reassembly")
        let defaults = Self()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        maxMessages = try container.decode(Int.self, forKey: .maxMessages, default: defaults.maxMessages)
        maxBytes = try container.decode(Int.self, forKey: .maxBytes, default: defaults.maxBytes)
        let timeoutMs = try container.decode(Int.self, forKey: .timeoutMs, default: defaults.timeout.wholeMilliseconds)
        try container.check(maxMessages >= 1, .maxMessages, "must be at least 1, got \(maxMessages)")
        try container.check(maxBytes >= 1, .maxBytes, "must be at least 1, got \(maxBytes)")
        try container.check(timeoutMs >= 1, .timeoutMs, "must be at least 1, got \(timeoutMs)")
        timeout = .milliseconds(timeoutMs)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(maxMessages, forKey: .maxMessages)
        try container.encode(maxBytes, forKey: .maxBytes)
        try container.encode(timeout.wholeMilliseconds, forKey: .timeoutMs)
    }
}
