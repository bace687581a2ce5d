extension NodeConfiguration {
    /// `messages:` — what the node tells senders about their messages.
    public struct MessagesSettings: Sendable, Codable, Hashable {
        /// Whether marking a message read (`scmesh read`) sends its sender a read
        /// receipt (``ReadReceipts``). Off by default: it tells the sender when you read.
        public var readReceipts: Bool = false

        /// Built-in defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case readReceipts = "read_receipts"
        }

        /// Decodes every key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            readReceipts = try container.decode(Bool.self, forKey: .readReceipts)
        }

        /// Encodes every key.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(readReceipts, forKey: .readReceipts)
        }
    }
}
