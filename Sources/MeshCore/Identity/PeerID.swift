/// The identity of a node on the mesh: 32 bytes.
///
/// With the placeholder identity a peer ID is 32 random bytes; with the crypto
/// identity (`MeshCrypto`) it is derived from the node's Ed25519 public key (see
/// `docs/PROTOCOL.md`). The core treats it as an opaque, totally ordered value.
public struct PeerID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The number of bytes in a peer ID.
    public static let byteCount = 32

    /// The raw bytes, always ``byteCount`` long.
    public let bytes: [UInt8]

    /// Creates a peer ID from exactly 32 bytes.
    /// - Throws: ``MeshError`` with code `.invalidArgument` when the count is wrong.
    public init(bytes: some Sequence<UInt8>) throws(MeshError) {
        let array = Array(bytes)
        guard array.count == Self.byteCount else {
            throw MeshError(.invalidArgument, "a peer ID has \(Self.byteCount) bytes, got \(array.count)")
        }
        self.bytes = array
    }

    /// Parses 64 hexadecimal characters; returns nil for anything else.
    public init?(hex: String) {
        guard let bytes = Hex.decode(hex), bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A peer ID of 32 random bytes (the placeholder identity).
    public static func random() -> PeerID {
        var generator = SystemRandomNumberGenerator()
        return try! PeerID(bytes: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The 64-character lowercase hexadecimal form.
    public var hex: String { Hex.encode(bytes) }

    /// An 8-character snippet for display (the first four bytes in hex).
    public var short: String { String(hex.prefix(8)) }

    public var description: String { short }

    /// Hashes the 32 bytes in one go (the synthesized hash fed them to the hasher
    /// one by one, with the count: a hot spot of every route table lookup).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    public static func < (lhs: PeerID, rhs: PeerID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let id = PeerID(hex: string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected 64 hex characters")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
