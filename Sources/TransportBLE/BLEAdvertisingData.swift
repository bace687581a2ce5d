import MeshCore

/// LE advertising data (Core Specification Supplement, part A): a sequence of AD
/// structures `[length][type][data...]`, at most 31 bytes in a legacy advertising or
/// scan-response packet. Pure Swift, so it is tested on any machine.
public enum BLEAdvertisingData {
    /// The most bytes a legacy advertising or scan-response payload carries.
    public static let legacyMaximum = 31

    /// AD types the transport writes or reads.
    public enum ADType {
        /// Flags.
        public static let flags: UInt8 = 0x01
        /// Incomplete list of 128-bit service UUIDs.
        public static let incompleteServiceUUIDs128: UInt8 = 0x06
        /// Complete list of 128-bit service UUIDs.
        public static let completeServiceUUIDs128: UInt8 = 0x07
        /// Complete local name.
        public static let completeLocalName: UInt8 = 0x09
        /// Service data with a 128-bit UUID.
        public static let serviceData128: UInt8 = 0x21
    }

    /// The Flags value for a general-discoverable, LE-only device.
    public static let generalDiscoverableLEOnly: UInt8 = 0x06

    /// One AD structure.
    public struct Structure: Hashable, Sendable {
        /// The AD type.
        public var type: UInt8
        /// The data after the type byte.
        public var data: [UInt8]

        /// Creates a structure.
        public init(type: UInt8, data: [UInt8]) {
            self.type = type
            self.data = data
        }
    }

    /// Encodes structures into one payload.
    /// - Throws: `.invalidArgument` when the payload exceeds `maximum` bytes or a
    ///   structure is longer than 254 bytes.
    public static func encode(_ structures: [Structure], maximum: Int = legacyMaximum) throws(MeshError) -> [UInt8] {
        var bytes: [UInt8] = []
        for structure in structures {
            guard structure.data.count <= 254 else {
                throw MeshError(
                    .invalidArgument,
                    "AD structure of type 0x\(String(structure.type, radix: 16)) has \(structure.data.count) bytes (at most 254)"
                )
            }
            bytes.append(UInt8(structure.data.count + 1))
            bytes.append(structure.type)
            bytes.append(contentsOf: structure.data)
        }
        guard bytes.count <= maximum else {
            throw MeshError(
                .invalidArgument,
                "advertising data of \(bytes.count) bytes exceeds the \(maximum)-byte limit"
            )
        }
        return bytes
    }

    /// Decodes a payload (advertising data, scan response, or both concatenated as the
    /// kernel reports them). A zero length byte ends the significant part.
    /// - Throws: `.malformedFrame` when a structure runs past the end.
    public static func decode(_ bytes: [UInt8]) throws(MeshError) -> [Structure] {
        var structures: [Structure] = []
        var index = 0
        while index < bytes.count {
            let length = Int(bytes[index])
            if length == 0 { break }
            guard index + 1 + length <= bytes.count else {
                throw MeshError(
                    .malformedFrame,
                    "advertising data: structure at offset \(index) claims \(length) bytes, \(bytes.count - index - 1) left"
                )
            }
            structures.append(Structure(type: bytes[index + 1], data: Array(bytes[(index + 2)..<(index + 1 + length)])))
            index += 1 + length
        }
        return structures
    }

    /// A 128-bit UUID from its text form (`6E400001-B5A3-F393-E0A9-E50E24DCCA9E`), in
    /// display (big-endian) byte order; nil when malformed.
    public static func uuidBytes(_ text: String) -> [UInt8]? {
        let hex = text.filter { $0 != "-" }
        guard hex.count == 32, let bytes = Hex.decode(hex) else { return nil }
        return bytes
    }
}

/// What an SCMesh node puts on the air: connectable advertising with the mesh service
/// UUID in the advertising data, and the identity beacon as service data in the scan
/// response (a legacy packet has 31 bytes; flags + the 128-bit UUID take 21 of them).
public enum BLEMeshAdvertisement {
    /// The mesh service UUID (the seed app's): `6E400001-B5A3-F393-E0A9-E50E24DCCA9E`.
    public static let serviceUUIDString = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
    /// The service UUID in display (big-endian) byte order.
    public static let serviceUUID: [UInt8] = BLEAdvertisingData.uuidBytes(serviceUUIDString)!
    /// The same UUID as it travels in AD structures (little-endian).
    static let serviceUUIDOnAir: [UInt8] = serviceUUID.reversed()

    /// The advertising data: the complete list of 128-bit service UUIDs (the kernel
    /// adds the Flags structure itself when advertising through mgmt; pass
    /// `includeFlags: true` for a self-contained payload).
    public static func advertisingData(includeFlags: Bool = false) -> [UInt8] {
        var structures: [BLEAdvertisingData.Structure] = []
        if includeFlags {
            structures.append(
                .init(type: BLEAdvertisingData.ADType.flags, data: [BLEAdvertisingData.generalDiscoverableLEOnly])
            )
        }
        structures.append(.init(type: BLEAdvertisingData.ADType.completeServiceUUIDs128, data: serviceUUIDOnAir))
        return try! BLEAdvertisingData.encode(structures)
    }

    /// The scan response: service data for the mesh UUID carrying the beacon.
    public static func scanResponse(beacon: BLEBeacon) -> [UInt8] {
        try! BLEAdvertisingData.encode([
            .init(type: BLEAdvertisingData.ADType.serviceData128, data: serviceUUIDOnAir + beacon.encoded())
        ])
    }

    /// What a scan learnt about one advertiser.
    public struct Sighting: Hashable, Sendable {
        /// Whether the advertiser lists the mesh service UUID or carries mesh service data.
        public var advertisesService: Bool
        /// The beacon, when the scan response carried a valid one.
        public var beacon: BLEBeacon?
    }

    /// Reads advertising data and/or scan response bytes; nil when they do not parse.
    public static func parse(_ bytes: [UInt8]) -> Sighting? {
        guard let structures = try? BLEAdvertisingData.decode(bytes) else { return nil }
        var sighting = Sighting(advertisesService: false, beacon: nil)
        for structure in structures {
            switch structure.type {
            case BLEAdvertisingData.ADType.completeServiceUUIDs128, BLEAdvertisingData.ADType.incompleteServiceUUIDs128:
                var offset = 0
                while offset + 16 <= structure.data.count {
                    if Array(structure.data[offset..<(offset + 16)]) == serviceUUIDOnAir {
                        sighting.advertisesService = true
                    }
                    offset += 16
                }
            case BLEAdvertisingData.ADType.serviceData128:
                guard structure.data.count >= 16, Array(structure.data[0..<16]) == serviceUUIDOnAir else { continue }
                sighting.advertisesService = true
                sighting.beacon = try? BLEBeacon(decoding: Array(structure.data[16...]))
            default:
                continue
            }
        }
        return sighting.advertisesService ? sighting : nil
    }
}
