import MeshCore

/// Where a BLE peer listens: its Bluetooth device address, the address type and the
/// L2CAP LE PSM. Its text form is a ``PeerHint`` address for the `ble` transport:
/// `"00:AA:01:00:00:00/public/0x0081"`.
public struct BLEPeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The LE address type.
    public struct AddressType: Hashable, Sendable, CustomStringConvertible {
        /// The kernel's `BDADDR_LE_*` value.
        let rawValue: UInt8
        /// A public (IEEE-assigned) device address.
        public static let `public` = AddressType(rawValue: 1)
        /// A random (static or private) device address.
        public static let random = AddressType(rawValue: 2)

        /// `public` or `random`.
        public var description: String { rawValue == 2 ? "random" : "public" }
    }

    /// The six address bytes in display order (most significant first).
    public var bytes: [UInt8]
    /// Public or random.
    public var type: AddressType
    /// The L2CAP LE PSM the peer listens on.
    public var psm: UInt16

    /// Creates an address from its parts.
    /// - Throws: `.invalidArgument` unless `bytes` has six elements.
    public init(bytes: [UInt8], type: AddressType, psm: UInt16) throws(MeshError) {
        guard bytes.count == 6 else {
            throw MeshError(.invalidArgument, "a Bluetooth address has 6 bytes, got \(bytes.count)")
        }
        self.bytes = bytes
        self.type = type
        self.psm = psm
    }

    /// Parses `"AA:BB:CC:DD:EE:FF/public/0x0081"` (type and PSM may be omitted: public,
    /// 0x0081).
    /// - Throws: `.invalidArgument` saying which part is wrong.
    public init(parsing text: String) throws(MeshError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else {
            throw MeshError(
                .invalidArgument,
                "BLE address \"\(text)\" is not of the form AA:BB:CC:DD:EE:FF/public/0x0081"
            )
        }
        let octets = parts[0].split(separator: ":", omittingEmptySubsequences: false)
        let bytes = octets.compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
        guard octets.count == 6, bytes.count == 6 else {
            throw MeshError(
                .invalidArgument,
                "BLE address \"\(text)\": \"\(parts[0])\" is not a Bluetooth address like 00:AA:01:00:00:00"
            )
        }
        var type = AddressType.public
        if parts.count >= 2 {
            switch parts[1].lowercased() {
            case "public", "": type = .public
            case "random": type = .random
            default:
                throw MeshError(
                    .invalidArgument,
                    "BLE address \"\(text)\": address type \"\(parts[1])\" is neither public nor random"
                )
            }
        }
        var psm: UInt16 = 0x0081
        if parts.count == 3 {
            guard let value = BLETransport.Configuration.parseInteger(String(parts[2])),
                (0x0001...0x00FF).contains(value)
            else {
                throw MeshError(
                    .invalidArgument,
                    "BLE address \"\(text)\": PSM \"\(parts[2])\" is not an LE PSM (0x0001–0x00FF)"
                )
            }
            psm = UInt16(value)
        }
        try self.init(bytes: bytes, type: type, psm: psm)
    }

    /// The device address alone, `"00:AA:01:00:00:00"`.
    public var deviceAddress: String {
        bytes.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    /// The hint address form, `"00:AA:01:00:00:00/public/0x0081"`.
    public var description: String {
        let hex = String(psm, radix: 16)
        return "\(deviceAddress)/\(type)/0x\(String(repeating: "0", count: max(0, 4 - hex.count)))\(hex)"
    }
}
