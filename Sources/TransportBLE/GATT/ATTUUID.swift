import MeshCore

/// A Bluetooth UUID as ATT carries it: 16-bit (an assigned number) or 128-bit, both
/// little-endian on the wire.
public struct ATTUUID: Hashable, Sendable, CustomStringConvertible {
    /// The wire bytes: 2 or 16, little-endian.
    public let bytes: [UInt8]

    /// A 16-bit UUID (`0x2800` primary service, `0x2803` characteristic, ...).
    public init(_ short: UInt16) {
        bytes = [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)]
    }

    /// Wire bytes; nil unless there are 2 or 16 of them.
    public init?(wire: some Collection<UInt8>) {
        guard wire.count == 2 || wire.count == 16 else { return nil }
        bytes = Array(wire)
    }

    /// Parses the text form `6E400001-B5A3-F393-E0A9-E50E24DCCA9E` (or 4 hex digits).
    /// - Throws: `.invalidArgument` for anything else.
    public init(parsing text: String) throws(MeshError) {
        let hex = text.filter { $0 != "-" }
        guard hex.count == 4 || hex.count == 32, let display = Hex.decode(hex) else {
            throw MeshError(
                .invalidArgument,
                "\"\(text)\" is not a Bluetooth UUID (4 or 32 hex digits, dashes allowed)"
            )
        }
        bytes = display.reversed()
    }

    /// True for a 16-bit UUID.
    public var isShort: Bool { bytes.count == 2 }

    /// The 16-bit value of a short UUID, else nil.
    public var shortValue: UInt16? { isShort ? UInt16(bytes[0]) | UInt16(bytes[1]) << 8 : nil }

    /// Upper-case text, big-endian: `2800` or `6E400001-B5A3-F393-E0A9-E50E24DCCA9E`.
    public var description: String {
        let hex = Hex.encode(Array(bytes.reversed())).uppercased()
        guard bytes.count == 16 else { return hex }
        let characters = Array(hex)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(characters[$0]) }.joined(separator: "-")
    }

    /// Primary Service declaration.
    public static let primaryService = ATTUUID(0x2800)
    /// Secondary Service declaration.
    public static let secondaryService = ATTUUID(0x2801)
    /// Characteristic declaration.
    public static let characteristic = ATTUUID(0x2803)
    /// Client Characteristic Configuration descriptor.
    public static let clientCharacteristicConfiguration = ATTUUID(0x2902)
}
