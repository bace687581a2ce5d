/// A message's identity: 16 random bytes chosen by its origin. Relays and receivers
/// drop duplicates by it.
public struct MessageID: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The number of bytes in a message ID.
    public static let byteCount = 16

    /// Two 64-bit halves of the identifier.
    public let high: UInt64
    /// The low half.
    public let low: UInt64

    /// Creates an identifier from its halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh random identifier.
    public static func random() -> MessageID {
        MessageID(high: .random(in: .min ... .max), low: .random(in: .min ... .max))
    }

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.write(high)
        writer.write(low)
        return writer.bytes
    }

    /// 32 hex characters.
    public var hex: String { Hex.encode(bytes) }

    /// Parses 32 hex characters.
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex), bytes.count == 16 else { return nil }
        var reader = ByteReader(bytes, context: "message id")
        guard let high = try? reader.readInteger(UInt64.self, field: "high"),
            let low = try? reader.readInteger(UInt64.self, field: "low")
        else { return nil }
        self.init(high: high, low: low)
    }

    public var description: String { String(hex.prefix(12)) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let id = MessageID(hex: try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected 32 hex characters")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
