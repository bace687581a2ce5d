import Foundation
import MeshCore
import Synchronization

/// Reads the battery from Linux's `/sys/class/power_supply` for the relay's battery
/// floor (`relay.battery_floor_percent`).
///
/// On mains (a supply whose `type` is `Mains`, `USB` or `USB_*` with `online` = 1), or
/// with no battery at all (servers, most desktops), there is no floor: nil. Otherwise
/// the lowest `capacity` of the batteries whose `status` is `Discharging`. A reading is
/// kept for ``cacheFor`` so relaying does not read sysfs per message.
public final class PowerSupplyGauge: BatteryGauge {
    private let directory: URL
    private let cacheFor: Duration
    private let cached = Mutex<(reading: Int?, at: ContinuousClock.Instant)?>(nil)

    /// A gauge over `directory` (the real one by default; tests pass a fake tree).
    public init(directory: String = "/sys/class/power_supply", cacheFor: Duration = .seconds(30)) {
        self.directory = URL(fileURLWithPath: directory)
        self.cacheFor = cacheFor
    }

    public func dischargingPercent() -> Int? {
        let now = ContinuousClock.now
        if let held = cached.withLock({ $0 }), now - held.at < cacheFor { return held.reading }
        let reading = read()
        cached.withLock { $0 = (reading, now) }
        return reading
    }

    /// Reads the supplies now, without the cache.
    func read() -> Int? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return nil }
        var lowest: Int?
        for name in names.sorted() {
            let supply = directory.appendingPathComponent(name)
            let type = value(supply, "type") ?? ""
            if type == "Mains" || type == "USB" || type.hasPrefix("USB_") {
                if value(supply, "online") == "1" { return nil }
            } else if type == "Battery", value(supply, "status") == "Discharging",
                let capacity = value(supply, "capacity").flatMap(Int.init)
            {
                lowest = min(lowest ?? capacity, capacity)
            }
        }
        return lowest
    }

    private func value(_ supply: URL, _ attribute: String) -> String? {
        (try? String(contentsOf: supply.appendingPathComponent(attribute), encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
