/// The parameters of the kernel's mgmt Device Found event (0x0012):
/// `address (6, little-endian) | address type (1) | RSSI (1) | flags (4) | EIR length (2) | EIR`.
/// For LE devices the EIR bytes are the advertising data followed by the scan response.
struct MgmtDeviceFound: Equatable {
    /// The device address in display order.
    var address: [UInt8]
    /// Public or random (mgmt types 1 and 2; 0 is BR/EDR).
    var type: BLEPeerAddress.AddressType
    /// The received signal strength in dBm (127: unknown).
    var rssi: Int8
    /// Advertising data and scan response.
    var eir: [UInt8]

    /// Parses the event's parameters; nil when they are short, the EIR length overruns
    /// them, or the device is not an LE device.
    init?(parameters: [UInt8]) {
        guard parameters.count >= 14 else { return nil }
        let length = Int(parameters[12]) | Int(parameters[13]) << 8
        guard parameters.count >= 14 + length else { return nil }
        switch parameters[6] {
        case 1: type = .public
        case 2: type = .random
        default: return nil
        }
        address = Array(parameters[0..<6].reversed())
        rssi = Int8(bitPattern: parameters[7])
        eir = Array(parameters[14..<(14 + length)])
    }
}
