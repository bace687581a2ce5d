import Foundation

/// What the kernel's power_supply tree (`/sys/class/power_supply`) says about the
/// machine's power: the battery's charge and status, and whether mains is online.
///
/// Several batteries read as one: the lowest charge, and `Discharging` when any of
/// them discharges. A machine with no battery (servers, most desktops) counts as on
/// mains.
public struct PowerState: Codable, Sendable, Hashable {
    /// The battery's charge in percent (the lowest of several); nil without a battery.
    public var batteryPercent: Int?
    /// The battery's `status` as the kernel writes it (`Charging`, `Discharging`,
    /// `Full`, `Not charging`, `Unknown`); nil without a battery.
    public var batteryStatus: String?
    /// Whether a mains or USB supply is online.
    public var mainsOnline: Bool

    /// Creates a state.
    public init(batteryPercent: Int? = nil, batteryStatus: String? = nil, mainsOnline: Bool = false) {
        self.batteryPercent = batteryPercent
        self.batteryStatus = batteryStatus
        self.mainsOnline = mainsOnline
    }

    /// Whether the machine has a battery the kernel reports.
    public var hasBattery: Bool { batteryPercent != nil || batteryStatus != nil }

    /// Whether the battery is being charged or is full on its charger.
    public var charging: Bool { batteryStatus == "Charging" || batteryStatus == "Full" }

    /// Whether the machine runs on external power: mains online, a charging battery,
    /// or no battery at all.
    public var onExternalPower: Bool { mainsOnline || charging || !hasBattery }

    /// Reads the tree at `supplyPath`. A missing or unreadable tree reads as no
    /// battery (on mains); a supply without a readable `type` is skipped.
    public static func read(supplyPath: String) -> PowerState {
        let files = FileManager.default
        guard let names = try? files.contentsOfDirectory(atPath: supplyPath) else { return PowerState() }
        var state = PowerState()
        for name in names.sorted() {
            let supply = supplyPath + "/" + name
            let type = attribute(supply, "type") ?? ""
            if type == "Mains" || type == "USB" || type.hasPrefix("USB_") {
                if attribute(supply, "online") == "1" { state.mainsOnline = true }
            } else if type == "Battery" {
                // A battery slot with `present` = 0 is empty.
                if attribute(supply, "present") == "0" { continue }
                let status = attribute(supply, "status") ?? "Unknown"
                if state.batteryStatus == nil || status == "Discharging" { state.batteryStatus = status }
                if let capacity = attribute(supply, "capacity").flatMap(Int.init) {
                    let clamped = min(100, max(0, capacity))
                    state.batteryPercent = min(state.batteryPercent ?? clamped, clamped)
                }
            }
        }
        return state
    }

    private static func attribute(_ supply: String, _ name: String) -> String? {
        (try? String(contentsOfFile: supply + "/" + name, encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
