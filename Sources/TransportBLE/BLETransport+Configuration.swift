import MeshCore

extension BLETransport {
    /// The BLE transport's settings: the `transports.ble` part of the node config.
    /// Every key is optional; the defaults run on any adapter with LE.
    ///
    /// ```yaml
    /// transports:
    ///   ble:
    ///     adapter: hci0
    ///     psm: 0x0081
    ///     security_level: low
    ///     advertising_interval_ms: 100
    ///     tx_power: 0
    ///     scan_interval_ms: 100
    ///     scan_window_ms: 30
    ///     beacon_rotation_seconds: 900
    ///     dedup_window_seconds: 5
    ///     gatt: true
    ///     data_path: auto
    ///     move_to_l2cap_after_seconds: 5
    ///     link_executor: reactor
    ///     gatt_write_window: 1
    /// ```
    ///
    /// About `psm`: LE credit-based channels take a PSM in the LE range 0x0001–0x00FF,
    /// of which 0x0080–0x00FF is free for applications. The seed app's `0x1001` is a
    /// BR/EDR dynamic PSM: the Linux kernel refuses it for LE (`bind` fails with
    /// `EINVAL`), so SCMesh uses `0x0081` by default and accepts only 0x0080–0x00FF.
    public struct Configuration: Codable, Sendable, Hashable {
        /// The controller to use: `hci0`, `hci1`, ... (key `adapter`).
        public var adapter: String = "hci0"
        /// The L2CAP LE PSM to listen on and to advertise, 0x0080–0x00FF (key `psm`;
        /// an integer or a string such as `"0x0081"`).
        public var psm: Int = 0x0081
        /// The link security the channel asks for (key `security_level`).
        public var securityLevel: SecurityLevel = .low
        /// Advertising interval in milliseconds, 20–10240 (key `advertising_interval_ms`).
        public var advertisingIntervalMs: Int = 100
        /// Advertising TX power in dBm, -127–20; nil leaves the controller's default
        /// (key `tx_power`).
        public var txPower: Int? = nil
        /// LE scan interval in milliseconds, 3–10240 (key `scan_interval_ms`).
        public var scanIntervalMs: Int = 100
        /// LE scan window in milliseconds, at most the interval (key `scan_window_ms`):
        /// the radio listens window/interval of the time.
        public var scanWindowMs: Int = 30
        /// How often the identity beacon changes, in seconds, at least 30
        /// (key `beacon_rotation_seconds`; 15 minutes by default, like the seed app).
        public var beaconRotationSeconds: Int = 900
        /// A peer seen again within this many seconds is not reported again
        /// (key `dedup_window_seconds`).
        public var dedupWindowSeconds: Double = 5
        /// Whether the node speaks the seed app's GATT profile: serves it (peripheral)
        /// and dials it when an L2CAP channel cannot be had (key `gatt`).
        public var gatt: Bool = true
        /// Which data path links use (key `data_path`).
        public var dataPath: DataPath = .auto
        /// With `data_path: gatt_first`, how long a link this node dialled over GATT
        /// carries traffic there before it moves to an L2CAP channel, in seconds, 0–3600
        /// (key `move_to_l2cap_after_seconds`; 0 moves as soon as the channel is open).
        public var moveToL2CAPAfterSeconds: Double = 5
        /// Where the core runs each link's tasks (key `link_executor`).
        public var linkExecutor: LinkExecutor = .reactor
        /// On a GATT link this node dialled: how many TX writes may be unanswered, 1–64
        /// (key `gatt_write_window`). 1 (the default): every packet is a Write Request,
        /// the next sent after its Write Response (the seed's "never overlap writes").
        /// N > 1: N − 1 packets as Write Commands, then one as a Write Request, whose
        /// response says the server took every earlier write (ATT keeps their order).
        public var gattWriteWindow: Int = 1

        /// Where the core runs a BLE link's tasks (``MeshCore/Link/preferredTaskExecutor``).
        public enum LinkExecutor: String, Codable, Sendable, Hashable, CaseIterable {
            /// On the reactor thread (``BLETransport/linkExecutor``): a packet wakes one
            /// thread. The router's per-frame work for every BLE link shares that thread.
            case reactor
            /// On Swift's global pool, as other transports' links: a packet wakes the
            /// reactor thread, then a pool thread.
            case pool
        }

        /// Which data path links use.
        public enum DataPath: String, Codable, Sendable, Hashable, CaseIterable {
            /// L2CAP channels when the remote accepts one, GATT otherwise (when `gatt` is on).
            case auto
            /// L2CAP channels only (the GATT server still answers phones when `gatt` is on,
            /// but no link is made over it by dialling).
            case l2cap
            /// GATT only: no L2CAP listener (the identity characteristic says PSM 0) and
            /// dials over GATT.
            case gatt
            /// GATT first, as phones do, then the link moves to an L2CAP channel when the
            /// remote's identity characteristic names a PSM (after
            /// ``Configuration/moveToL2CAPAfterSeconds``); L2CAP when GATT fails. Listens
            /// on both.
            case gattFirst = "gatt_first"

            /// The order a dial tries the paths in.
            public func dialOrder(gattEnabled: Bool) -> [BLETransport.DataPathKind] {
                switch self {
                case .auto: gattEnabled ? [.l2cap, .gatt] : [.l2cap]
                case .l2cap: [.l2cap]
                case .gatt: [.gatt]
                case .gattFirst: gattEnabled ? [.gatt, .l2cap] : [.l2cap]
                }
            }

            /// Whether a link dialled over GATT may move to an L2CAP channel.
            public var movesToL2CAP: Bool { self == .auto || self == .gattFirst }
        }

        /// The security level of an L2CAP channel.
        public enum SecurityLevel: String, Codable, Sendable, Hashable, CaseIterable {
            /// No pairing, no link-layer encryption (the mesh's Noise handshake still
            /// authenticates and encrypts every frame).
            case low
            /// Encrypted link: unauthenticated pairing (LE Secure Connections Just Works).
            case medium
            /// Encrypted and authenticated (MITM-protected) pairing.
            case high
        }

        /// The defaults.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case adapter
            case psm
            case securityLevel = "security_level"
            case advertisingIntervalMs = "advertising_interval_ms"
            case txPower = "tx_power"
            case scanIntervalMs = "scan_interval_ms"
            case scanWindowMs = "scan_window_ms"
            case beaconRotationSeconds = "beacon_rotation_seconds"
            case dedupWindowSeconds = "dedup_window_seconds"
            case gatt
            case dataPath = "data_path"
            case moveToL2CAPAfterSeconds = "move_to_l2cap_after_seconds"
            case linkExecutor = "link_executor"
            case gattWriteWindow = "gatt_write_window"
        }

        /// Decodes the keys that are present and keeps the default for the others.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init()
            adapter = try container.decodeIfPresent(String.self, forKey: .adapter) ?? adapter
            if container.contains(.psm) {
                if let number = try? container.decode(Int.self, forKey: .psm) {
                    psm = number
                } else {
                    let text = try container.decode(String.self, forKey: .psm)
                    guard let number = Self.parseInteger(text) else {
                        throw DecodingError.dataCorruptedError(
                            forKey: .psm,
                            in: container,
                            debugDescription: "psm: expected an integer such as 0x0081, got \"\(text)\""
                        )
                    }
                    psm = number
                }
            }
            securityLevel = try container.decodeIfPresent(SecurityLevel.self, forKey: .securityLevel) ?? securityLevel
            advertisingIntervalMs =
                try container.decodeIfPresent(Int.self, forKey: .advertisingIntervalMs) ?? advertisingIntervalMs
            txPower = try container.decodeIfPresent(Int.self, forKey: .txPower) ?? txPower
            scanIntervalMs = try container.decodeIfPresent(Int.self, forKey: .scanIntervalMs) ?? scanIntervalMs
            scanWindowMs = try container.decodeIfPresent(Int.self, forKey: .scanWindowMs) ?? scanWindowMs
            beaconRotationSeconds =
                try container.decodeIfPresent(Int.self, forKey: .beaconRotationSeconds) ?? beaconRotationSeconds
            dedupWindowSeconds =
                try container.decodeIfPresent(Double.self, forKey: .dedupWindowSeconds) ?? dedupWindowSeconds
            gatt = try container.decodeIfPresent(Bool.self, forKey: .gatt) ?? gatt
            if container.contains(.dataPath) {
                let text = try container.decode(String.self, forKey: .dataPath)
                guard let path = DataPath(rawValue: text) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .dataPath,
                        in: container,
                        debugDescription: "data_path: expected one of auto, l2cap, gatt, gatt_first, got \"\(text)\""
                    )
                }
                dataPath = path
            }
            moveToL2CAPAfterSeconds =
                try container.decodeIfPresent(Double.self, forKey: .moveToL2CAPAfterSeconds) ?? moveToL2CAPAfterSeconds
            if container.contains(.linkExecutor) {
                let text = try container.decode(String.self, forKey: .linkExecutor)
                guard let executor = LinkExecutor(rawValue: text) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .linkExecutor,
                        in: container,
                        debugDescription: "link_executor: expected reactor or pool, got \"\(text)\""
                    )
                }
                linkExecutor = executor
            }
            gattWriteWindow = try container.decodeIfPresent(Int.self, forKey: .gattWriteWindow) ?? gattWriteWindow
        }

        /// Checks every value.
        /// - Throws: ``MeshError`` `.invalidConfiguration` naming the bad key and its valid range.
        public func validate() throws(MeshError) {
            func bad(_ key: CodingKeys, _ message: String) -> MeshError {
                MeshError(.invalidConfiguration, "transports.ble.\(key.rawValue): \(message)")
            }
            guard adapter.hasPrefix("hci"), let index = Int(adapter.dropFirst(3)), index >= 0, index < 0xFFFF else {
                throw bad(.adapter, "\"\(adapter)\" is not an adapter name like hci0 (see /sys/class/bluetooth)")
            }
            guard (0x0080...0x00FF).contains(psm) else {
                let hint =
                    psm > 0xFF
                    ? " (0x\(String(psm, radix: 16)) is a BR/EDR PSM; the kernel rejects it for LE channels)" : ""
                throw bad(.psm, "0x\(String(psm, radix: 16)) is outside the LE dynamic range 0x0080–0x00FF\(hint)")
            }
            guard (20...10_240).contains(advertisingIntervalMs) else {
                throw bad(.advertisingIntervalMs, "\(advertisingIntervalMs) is outside 20–10240 ms")
            }
            if let txPower, !(-127...20).contains(txPower) {
                throw bad(.txPower, "\(txPower) dBm is outside -127–20 dBm")
            }
            guard (3...10_240).contains(scanIntervalMs) else {
                throw bad(.scanIntervalMs, "\(scanIntervalMs) is outside 3–10240 ms")
            }
            guard scanWindowMs >= 3, scanWindowMs <= scanIntervalMs else {
                throw bad(
                    .scanWindowMs,
                    "\(scanWindowMs) must be at least 3 ms and at most scan_interval_ms (\(scanIntervalMs))"
                )
            }
            guard beaconRotationSeconds >= 30 else {
                throw bad(.beaconRotationSeconds, "\(beaconRotationSeconds) is below the minimum of 30 seconds")
            }
            guard dedupWindowSeconds >= 0, dedupWindowSeconds.isFinite else {
                throw bad(.dedupWindowSeconds, "\(dedupWindowSeconds) must be a non-negative number of seconds")
            }
            guard dataPath != .gatt || gatt else {
                throw bad(
                    .dataPath,
                    "gatt needs the GATT profile, which transports.ble.gatt switches off; set gatt: true or choose auto or l2cap"
                )
            }
            guard (0...3600).contains(moveToL2CAPAfterSeconds) else {
                throw bad(.moveToL2CAPAfterSeconds, "\(moveToL2CAPAfterSeconds) is outside 0–3600 seconds")
            }
            guard (1...64).contains(gattWriteWindow) else {
                throw bad(.gattWriteWindow, "\(gattWriteWindow) is outside 1–64 (1: every TX write a Write Request)")
            }
        }

        /// The controller index (`hci1` → 1); valid after ``validate()``.
        var adapterIndex: UInt16 { UInt16(adapter.dropFirst(3)) ?? 0 }

        static func parseInteger(_ text: String) -> Int? {
            let trimmed = text.trimmingPrefix(" ")
            if trimmed.hasPrefix("0x") || trimmed.hasPrefix("0X") { return Int(trimmed.dropFirst(2), radix: 16) }
            return Int(trimmed)
        }
    }
}
