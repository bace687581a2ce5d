/// An ATT error code (Error Response).
public struct ATTError: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code.
    public let rawValue: UInt8
    /// Wraps a code.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `0x01` the handle is not valid on this server.
    public static let invalidHandle = ATTError(rawValue: 0x01)
    /// `0x02` the attribute cannot be read.
    public static let readNotPermitted = ATTError(rawValue: 0x02)
    /// `0x03` the attribute cannot be written.
    public static let writeNotPermitted = ATTError(rawValue: 0x03)
    /// `0x04` the PDU was invalid.
    public static let invalidPDU = ATTError(rawValue: 0x04)
    /// `0x06` the server does not support the request.
    public static let requestNotSupported = ATTError(rawValue: 0x06)
    /// `0x0A` no attribute in the range.
    public static let attributeNotFound = ATTError(rawValue: 0x0A)
    /// `0x0D` the value has the wrong length.
    public static let invalidAttributeValueLength = ATTError(rawValue: 0x0D)
    /// `0x0E` the request failed for a reason not listed.
    public static let unlikelyError = ATTError(rawValue: 0x0E)
    /// `0x10` the group type is not a grouping attribute.
    public static let unsupportedGroupType = ATTError(rawValue: 0x10)
    /// `0x11` the server is out of resources.
    public static let insufficientResources = ATTError(rawValue: 0x11)

    /// Name and code, e.g. `Attribute Not Found (0x0a)`.
    public var description: String {
        let name: String
        switch self {
        case .invalidHandle: name = "Invalid Handle"
        case .readNotPermitted: name = "Read Not Permitted"
        case .writeNotPermitted: name = "Write Not Permitted"
        case .invalidPDU: name = "Invalid PDU"
        case .requestNotSupported: name = "Request Not Supported"
        case .attributeNotFound: name = "Attribute Not Found"
        case .invalidAttributeValueLength: name = "Invalid Attribute Value Length"
        case .unlikelyError: name = "Unlikely Error"
        case .unsupportedGroupType: name = "Unsupported Group Type"
        case .insufficientResources: name = "Insufficient Resources"
        default: name = "ATT error"
        }
        return "\(name) (0x\(rawValue < 16 ? "0" : "")\(String(rawValue, radix: 16)))"
    }
}

extension Array where Element == UInt8 {
    /// Appends a little-endian 16-bit value (ATT byte order).
    mutating func attAppendLE16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
    }

    /// The little-endian 16-bit value at `offset` (the caller checked the bounds).
    func attLE16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) | UInt16(self[offset + 1]) << 8
    }
}
