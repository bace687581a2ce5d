import Foundation
import MeshCore
import MeshNode
import TestSupport
import Testing

/// The relay budgets as a node reads them: `relay:` keys with errors naming the key,
/// and the battery read from a `/sys/class/power_supply` tree.
@Suite struct RelayLimitsNodeTests {
    @Test(
        "relay.max_per_hour, neighbour_share and battery_floor_percent: shipped values, --set, and errors naming the key"
    )
    func configKeys() throws {
        let shipped = try NodeConfiguration.load(file: nil, environment: [:], registry: .builtIn)
        #expect(
            shipped.routerConfiguration.relayLimits
                == RelayLimits(maxPerHour: 10_000, neighbourShare: 0.25, batteryFloorPercent: 20)
        )
        let set = try NodeConfiguration.load(
            yaml: "relay: {enabled: true, max_per_hour: 50}",
            source: "f",
            overrides: ["relay.neighbour_share=0.5"],
            registry: .builtIn
        )
        #expect(
            set.routerConfiguration.relayLimits
                == RelayLimits(maxPerHour: 50, neighbourShare: 0.5, batteryFloorPercent: 20)
        )
        #expect(set.relay.enabled)
        #expect(try set.yaml().contains("  max_per_hour: 50\n"))
        for (yaml, expected) in [
            ("relay: {max_per_hour: -1}", "relay.max_per_hour: must be 0 (no limit) or more, got -1"),
            ("relay: {neighbour_share: 0}", "relay.neighbour_share: must be above 0 and at most 1, got 0.0"),
            (
                "relay: {battery_floor_percent: 101}",
                "relay.battery_floor_percent: must be between 0 (never) and 100, got 101"
            ),
        ] {
            #expect(throws: MeshError.self) { try NodeConfiguration.load(yaml: yaml, source: "f", registry: .builtIn) }
            do {
                _ = try NodeConfiguration.load(yaml: yaml, source: "f", registry: .builtIn)
            } catch {
                #expect("\(error)".contains(expected), "\(error)")
            }
        }
    }

    /// Writes a fake power-supply tree: name → attributes.
    static func supplies(_ supplies: [String: [String: String]]) throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory()
        for (name, attributes) in supplies {
            let path = directory.file(name)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for (attribute, value) in attributes {
                try (value + "\n").write(toFile: path + "/" + attribute, atomically: true, encoding: .utf8)
            }
        }
        return directory
    }

    @Test(
        "the battery gauge: discharging battery → its charge (the lowest of several); on mains, charging or no battery → no floor"
    )
    func powerSupplyGauge() throws {
        let cases: [([String: [String: String]], Int?)] = [
            (["BAT0": ["type": "Battery", "status": "Discharging", "capacity": "14"]], 14),
            (
                [
                    "BAT0": ["type": "Battery", "status": "Discharging", "capacity": "64"],
                    "BAT1": ["type": "Battery", "status": "Discharging", "capacity": "31"],
                ], 31
            ),
            (
                [
                    "AC": ["type": "Mains", "online": "1"],
                    "BAT0": ["type": "Battery", "status": "Discharging", "capacity": "14"],
                ], nil
            ),
            (
                [
                    "AC": ["type": "Mains", "online": "0"],
                    "BAT0": ["type": "Battery", "status": "Discharging", "capacity": "14"],
                ], 14
            ),
            (
                [
                    "usb": ["type": "USB_C", "online": "1"],
                    "BAT0": ["type": "Battery", "status": "Discharging", "capacity": "5"],
                ], nil
            ),
            (["BAT0": ["type": "Battery", "status": "Charging", "capacity": "14"]], nil),
            ([:], nil),
        ]
        for (tree, expected) in cases {
            let directory = try Self.supplies(tree)
            defer { directory.cleanUp() }
            #expect(PowerSupplyGauge(directory: directory.path).dischargingPercent() == expected, "\(tree)")
        }
        #expect(PowerSupplyGauge(directory: "/nonexistent/power_supply").dischargingPercent() == nil)
    }
}
