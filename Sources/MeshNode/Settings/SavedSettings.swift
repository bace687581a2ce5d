import Foundation
import MeshCore
import Synchronization

/// The run-time changes a node keeps across restarts, in `DATA-DIR/runtime_settings.json`:
/// the relay switch and budgets set with `scmesh settings`, and the transports switched
/// off with `scmesh transports disable`, and the power overrides and pinned profile set
/// with `scmesh power`. (The discovery mode has its own file,
/// ``SavedDiscoveryMode``.)
///
/// A field that is absent takes the config's value; a node starting on the data
/// directory applies the others over its config (``applied(to:)``). `scmesh settings
/// --reset` removes the relay fields (and the saved discovery mode); `scmesh transports
/// enable` removes a name from ``disabledTransports``.
///
/// ```json
/// {"relay_enabled":false,"relay_max_per_hour":500,"disabled_transports":["mdns"]}
/// ```
public struct SavedSettings: Codable, Sendable, Hashable {
    /// The relay switch (`relay.enabled`), when changed at run time.
    public var relayEnabled: Bool?
    /// `relay.max_per_hour`, when changed at run time.
    public var relayMaxPerHour: Int?
    /// `relay.neighbour_share`, when changed at run time.
    public var relayNeighbourShare: Double?
    /// `relay.battery_floor_percent`, when changed at run time.
    public var relayBatteryFloorPercent: Int?
    /// Transports switched off at run time, by name.
    public var disabledTransports: [String]?
    /// The relay budget set with `scmesh power --override relay_max_per_hour=N`: it
    /// holds whatever the power profile says.
    public var powerOverrideRelayMaxPerHour: Int?
    /// The BLE scan interval set with `scmesh power --override ble_scan_interval_ms=N`.
    public var powerOverrideBleScanIntervalMs: Int?
    /// The profile pinned with `scmesh power --profile NAME`; absent: the power state picks it.
    public var powerProfile: PowerProfile?

    /// Creates saved settings (all absent: the config's values).
    public init() {}

    /// The file's name inside the data directory.
    public static let fileName = "runtime_settings.json"

    /// Serialises the read-change-write of ``update(dataDirectory:_:)`` within the process.
    private static let writing = Mutex(())

    /// The file's path for a data directory.
    public static func path(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent(fileName)
    }

    /// The saved settings (all absent when no file exists).
    /// - Throws: ``MeshError`` `.invalidConfiguration` naming the file when it cannot be
    ///   read or is not such a JSON object.
    public static func load(dataDirectory: String) throws(MeshError) -> SavedSettings {
        let path = path(dataDirectory: dataDirectory)
        guard FileManager.default.fileExists(atPath: path) else { return SavedSettings() }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            let decoder = JSONDecoder()
            decoder.keyDecodingStrategy = .convertFromSnakeCase
            return try decoder.decode(SavedSettings.self, from: data)
        } catch {
            throw MeshError(
                .invalidConfiguration,
                "\(path) is not a saved-settings JSON object (\(error.localizedDescription)); fix it, or delete it to use the config's values",
                cause: error
            )
        }
    }

    /// Reads the file, changes it with `change` and saves it durably (written to a
    /// temporary file, synced, renamed over the old one; removed when nothing is left).
    /// - Throws: as ``load(dataDirectory:)``; `.invalidArgument` naming the file when it
    ///   cannot be written (nothing changed then).
    @discardableResult
    public static func update(
        dataDirectory: String,
        _ change: (inout SavedSettings) -> Void
    ) throws(MeshError) -> SavedSettings {
        try writing.withLock { _ throws(MeshError) in
            var settings = try load(dataDirectory: dataDirectory)
            change(&settings)
            if settings.disabledTransports?.isEmpty == true { settings.disabledTransports = nil }
            let path = path(dataDirectory: dataDirectory)
            if settings == SavedSettings() {
                if unlink(path) != 0, errno != ENOENT { throw failure(path, errno) }
                return settings
            }
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys]
            let bytes = Array((try? encoder.encode(settings)) ?? Data()) + Array("\n".utf8)
            try write(bytes, to: path)
            return settings
        }
    }

    /// `configuration` with the saved relay switch and budgets applied.
    public func applied(to configuration: NodeConfiguration) -> NodeConfiguration {
        var result = configuration
        if let relayEnabled { result.routerConfiguration.relayEnabled = relayEnabled }
        if let relayMaxPerHour { result.routerConfiguration.relayLimits.maxPerHour = relayMaxPerHour }
        if let relayNeighbourShare { result.routerConfiguration.relayLimits.neighbourShare = relayNeighbourShare }
        if let relayBatteryFloorPercent {
            result.routerConfiguration.relayLimits.batteryFloorPercent = relayBatteryFloorPercent
        }
        return result
    }

    /// The names of the settings `scmesh settings` shows that come from a run-time
    /// change (`relay_enabled`, `relay_max_per_hour`, ...), in that order.
    public var changedNames: [String] {
        [
            relayEnabled.map { _ in "relay_enabled" }, relayMaxPerHour.map { _ in "relay_max_per_hour" },
            relayNeighbourShare.map { _ in "relay_neighbour_share" },
            relayBatteryFloorPercent.map { _ in "relay_battery_floor_percent" },
        ].compactMap { $0 }
    }

    private static func write(_ bytes: [UInt8], to path: String) throws(MeshError) {
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw failure(path, errno) }
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor)
        let code = errno
        close(descriptor)
        guard written == bytes.count, synced == 0 else {
            unlink(temporary)
            throw failure(path, code)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw failure(path, code)
        }
    }

    private static func failure(_ path: String, _ code: Int32) -> MeshError {
        MeshError(
            .invalidArgument,
            "cannot save run-time settings to \(path): \(String(cString: strerror(code)).lowercased()); nothing was changed"
        )
    }
}
