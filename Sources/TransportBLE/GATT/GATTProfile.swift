import MeshCore

/// The seed app's GATT profile, identical on Android, iOS and SCMesh: one primary
/// service with three characteristics.
///
/// | UUID | characteristic | properties |
/// | --- | --- | --- |
/// | `6E400001-B5A3-F393-E0A9-E50E24DCCA9E` | the service | |
/// | `6E400002-…` | TX: frames from the central (client) to the peripheral | write, write without response |
/// | `6E400003-…` | RX: frames from the peripheral to the central | notify (CCCD) |
/// | `6E400004-…` | identity: ``GATTIdentity`` (12 bytes) | read |
public enum GATTProfile {
    /// The mesh service (also advertised, see ``BLEMeshAdvertisement``).
    public static let service = uuid(0x01)
    /// TX: the central writes frames here.
    public static let tx = uuid(0x02)
    /// RX: the peripheral notifies frames here.
    public static let rx = uuid(0x03)
    /// Identity: the rotating beacon and the L2CAP PSM, read-only.
    public static let identity = uuid(0x04)

    /// `6E4000xx-B5A3-F393-E0A9-E50E24DCCA9E`, little-endian.
    private static func uuid(_ last: UInt8) -> ATTUUID {
        let display: [UInt8] = [
            0x6E, 0x40, 0x00, last, 0xB5, 0xA3, 0xF3, 0x93, 0xE0, 0xA9, 0xE5, 0x0E, 0x24, 0xDC, 0xCA, 0x9E,
        ]
        return ATTUUID(wire: display.reversed())!
    }

    /// Characteristic properties (the declaration's first byte).
    public enum Property {
        /// Read.
        public static let read: UInt8 = 0x02
        /// Write without response.
        public static let writeWithoutResponse: UInt8 = 0x04
        /// Write.
        public static let write: UInt8 = 0x08
        /// Notify.
        public static let notify: UInt8 = 0x10
    }
}

/// The identity characteristic's value: 12 bytes (the seed allows up to 24).
///
/// | byte | meaning |
/// | --- | --- |
/// | 0–9 | the ``BLEBeacon`` of the current time window, as in the scan response (version, PSM low byte, ephemeral identifier) |
/// | 10–11 | the L2CAP LE PSM this node accepts channels on now, little-endian; `0x0000` when it accepts none (`data_path: gatt`) |
public struct GATTIdentity: Hashable, Sendable {
    /// The beacon.
    public var beacon: BLEBeacon
    /// The PSM a central may open a channel on, or 0 for none.
    public var listeningPSM: UInt16

    /// Encoded size.
    public static let encodedLength = BLEBeacon.encodedLength + 2

    /// Creates one.
    public init(beacon: BLEBeacon, listeningPSM: UInt16) {
        self.beacon = beacon
        self.listeningPSM = listeningPSM
    }

    /// Decodes the characteristic value; trailing bytes (a later version's) are ignored.
    /// - Throws: `.malformedFrame` for a short value or a bad beacon.
    public init(decoding bytes: [UInt8]) throws(MeshError) {
        guard bytes.count >= Self.encodedLength else {
            throw MeshError(
                .malformedFrame,
                "GATT identity value of \(bytes.count) bytes is shorter than \(Self.encodedLength)"
            )
        }
        beacon = try BLEBeacon(decoding: Array(bytes[0..<BLEBeacon.encodedLength]))
        listeningPSM = bytes.attLE16(at: BLEBeacon.encodedLength)
    }

    /// The value's bytes.
    public func encoded() -> [UInt8] {
        var out = beacon.encoded()
        out.attAppendLE16(listeningPSM)
        return out
    }
}
