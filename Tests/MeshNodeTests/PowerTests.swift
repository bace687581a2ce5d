import Foundation
import Logging
import MeshCore
import MeshNode
import MeshTesting
import Synchronization
import TestSupport
import Testing

/// Issue 46's first slice: the power state read from a fake power_supply tree, its
/// profile, the `power:` config section, and the monitor applying the profile's relay
/// budget on an injected clock.
@Suite("power state and profiles")
struct PowerTests {
    static let discharging12 = ["BAT0": ["type": "Battery", "status": "Discharging", "capacity": "12"]]
    static let charging95 = [
        "AC": ["type": "Mains", "online": "1"],
        "BAT0": ["type": "Battery", "status": "Charging", "capacity": "95"],
    ]

    @Test("discharging at 12 % → minimal; charging at 95 % → maximum; no battery or no tree → maximum")
    func stateToProfile() throws {
        let low = try RelayLimitsNodeTests.supplies(Self.discharging12)
        defer { low.cleanUp() }
        let lowState = PowerState.read(supplyPath: low.path)
        #expect(lowState == PowerState(batteryPercent: 12, batteryStatus: "Discharging", mainsOnline: false))
        #expect(PowerProfile(lowState) == .minimal)

        let charging = try RelayLimitsNodeTests.supplies(Self.charging95)
        defer { charging.cleanUp() }
        let chargingState = PowerState.read(supplyPath: charging.path)
        #expect(chargingState == PowerState(batteryPercent: 95, batteryStatus: "Charging", mainsOnline: true))
        #expect(PowerProfile(chargingState) == .maximum)

        let none = try RelayLimitsNodeTests.supplies(["AC": ["type": "Mains", "online": "0"]])
        defer { none.cleanUp() }
        #expect(PowerState.read(supplyPath: none.path) == PowerState())
        #expect(PowerProfile(PowerState.read(supplyPath: none.path)) == .maximum)
        #expect(PowerProfile(PowerState.read(supplyPath: "/nonexistent/power_supply")) == .maximum)
    }

    @Test("battery thresholds pick the profile; the profile caps the relay budget, never raises the config's")
    func thresholds() {
        let cases: [(Int, PowerProfile)] = [
            (100, .high), (80, .high), (79, .standard), (50, .standard), (49, .reduced), (20, .reduced),
            (19, .minimal), (0, .minimal),
        ]
        for (percent, profile) in cases {
            let state = PowerState(batteryPercent: percent, batteryStatus: "Discharging")
            #expect(PowerProfile(state) == profile, "\(percent) %")
        }
        #expect(PowerProfile(PowerState(batteryPercent: 30, batteryStatus: "Full")) == .maximum)
        #expect(
            PowerProfile(PowerState(batteryPercent: 30, batteryStatus: "Discharging", mainsOnline: true)) == .maximum
        )
        #expect(PowerProfile.maximum.relayMaxPerHour(configured: 10_000) == (10_000, .config))
        #expect(PowerProfile.minimal.relayMaxPerHour(configured: 10_000) == (60, .profile))
        #expect(PowerProfile.minimal.relayMaxPerHour(configured: 0) == (60, .profile))
        #expect(PowerProfile.reduced.relayMaxPerHour(configured: 100) == (100, .config))
    }

    @Test("power: defaults, values from --set, an unknown key or a bad value is refused naming the key")
    func config() throws {
        let defaults = try NodeConfiguration.load(yaml: "", source: "f", registry: .builtIn).power
        #expect(defaults == NodeConfiguration.PowerSettings())
        #expect(defaults.supplyPath == "/sys/class/power_supply" && defaults.pollSeconds == 60 && defaults.autoAdjust)
        let set = try NodeConfiguration.load(
            yaml: "power:\n  supply_path: /tmp/ps\n",
            source: "f",
            overrides: ["power.poll_seconds=5", "power.auto_adjust=false"],
            registry: .builtIn
        ).power
        #expect(set.supplyPath == "/tmp/ps" && set.pollSeconds == 5 && !set.autoAdjust)
        func error(_ yaml: String) -> String? {
            do {
                _ = try NodeConfiguration.load(yaml: yaml, source: "test.yaml", registry: .builtIn)
                return nil
            } catch {
                return "\(error)"
            }
        }
        let unknown = try #require(error("power:\n  poll_secs: 5\n"))
        #expect(
            unknown.contains(
                "unknown key power.poll_secs (known keys of power: supply_path, poll_seconds, auto_adjust)"
            ),
            "\(unknown)"
        )
        let bad = try #require(error("power:\n  poll_seconds: 0\n"))
        #expect(bad.contains("poll_seconds: must be 0.05 to 86400"), "\(bad)")
    }

    /// A relay budget held the way the router holds it, for the monitor to read and set.
    final class Budget: Sendable {
        let value: Mutex<Int>
        init(_ value: Int) { self.value = Mutex(value) }
        var current: Int { value.withLock { $0 } }
    }

    static func monitor(
        path: String,
        budget: Budget,
        clock: ManualClock,
        autoAdjust: Bool = true,
        dataDirectory: String? = nil,
        events: EventLog? = nil,
        applyPacing: @escaping @Sendable (TransportPacing) async -> Void = { _ in }
    ) -> PowerMonitor {
        var settings = NodeConfiguration.PowerSettings()
        settings.supplyPath = path
        settings.pollSeconds = 60
        settings.autoAdjust = autoAdjust
        return PowerMonitor(
            settings: settings,
            configuredMaxPerHour: 10_000,
            clock: clock,
            logger: Logger(label: "power-test"),
            dataDirectory: dataDirectory,
            events: events,
            currentMaxPerHour: { budget.current },
            applyMaxPerHour: { perHour in budget.value.withLock { $0 = perHour } },
            applyPacing: applyPacing
        )
    }

    @Test("the monitor applies the profile at start and again within one poll of the battery changing")
    func monitorPolls() async throws {
        let tree = try RelayLimitsNodeTests.supplies([
            "BAT0": ["type": "Battery", "status": "Discharging", "capacity": "90"]
        ])
        defer { tree.cleanUp() }
        let clock = ManualClock()
        let budget = Budget(10_000)
        let monitor = Self.monitor(path: tree.path, budget: budget, clock: clock)
        let task = Task { try await monitor.run() }
        defer { task.cancel() }
        await clock.waitForSleepers(atLeast: 1)
        #expect(budget.current == 2000)

        try "12\n".write(toFile: tree.file("BAT0") + "/capacity", atomically: true, encoding: .utf8)
        #expect(budget.current == 2000, "no read before the poll is due")
        clock.advance(by: .seconds(60))
        try await eventually("the next poll applies minimal's budget") { budget.current == 60 }
        let reply = monitor.poll()
        #expect(reply.profile == .minimal)
        #expect(reply.effective.relayMaxPerHour == 60 && reply.sources.relayMaxPerHour == .profile)

        // A budget set with `scmesh settings` holds while the profile stays.
        budget.value.withLock { $0 = 500 }
        clock.advance(by: .seconds(60))
        await clock.waitForSleepers(atLeast: 1)
        let held = monitor.poll()
        #expect(budget.current == 500)
        #expect(held.effective.relayMaxPerHour == 500 && held.sources.relayMaxPerHour == .settings)
    }

    @Test("with auto_adjust off the profile is reported but the config's budget stays")
    func autoAdjustOff() throws {
        let tree = try RelayLimitsNodeTests.supplies(Self.discharging12)
        defer { tree.cleanUp() }
        let budget = Budget(10_000)
        let reply = Self.monitor(path: tree.path, budget: budget, clock: ManualClock(), autoAdjust: false).poll()
        #expect(reply.profile == .minimal && !reply.autoAdjust)
        #expect(budget.current == 10_000)
        #expect(reply.effective.relayMaxPerHour == 10_000 && reply.sources.relayMaxPerHour == .config)
    }
}

/// `scmesh power --json` on a real `scmesh run` process reading a fake power_supply tree.
@Suite("scmesh power on a node process")
struct PowerProcessTests {
    @Test(
        "scmesh power --json says state, profile and sources; a battery change reaches the relay budget within a poll"
    )
    func powerCommand() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let directory = nodes.directory
        let supplies = directory.file("power_supply")
        let battery = supplies + "/BAT0"
        try FileManager.default.createDirectory(atPath: battery, withIntermediateDirectories: true)
        for (name, value) in ["type": "Battery", "status": "Discharging", "capacity": "90"] {
            try (value + "\n").write(toFile: battery + "/" + name, atomically: true, encoding: .utf8)
        }
        let node = try await nodes.startAlone(
            "node",
            [
                "--set", "power.supply_path=\(supplies)",
                "--set", "power.poll_seconds=0.2",
            ]
        )
        let (data, client) = (node.dataDirectory, node.client)

        let first = try await runScmesh(["power", "--data-dir", data, "--json"], home: directory.path)
        #expect(first.status == 0, "\(first.standardError)")
        let reply = try jsonObject(first.standardOutput)
        #expect(reply["ok"] as? Bool == true)
        #expect(reply["profile"] as? String == "high")
        #expect(reply["auto_adjust"] as? Bool == true)
        let state = try #require(reply["state"] as? [String: Any])
        #expect(state["battery_percent"] as? Int == 90 && state["battery_status"] as? String == "Discharging")
        #expect(state["mains_online"] as? Bool == false)
        #expect((reply["effective"] as? [String: Any])?["relay_max_per_hour"] as? Int == 2000)
        #expect((reply["sources"] as? [String: Any])?["relay_max_per_hour"] as? String == "profile")

        // The poll, not `power`'s own read, moves the budget: watch it through `settings`.
        try "12\n".write(toFile: battery + "/capacity", atomically: true, encoding: .utf8)
        try await eventually("the node's poll applies minimal's relay budget") {
            try await client.call(.settings(SettingsRequest())).decode(SettingsReply.self).relayMaxPerHour == 60
        }
        let second = try await runScmesh(["power", "--data-dir", data, "--json"], home: directory.path)
        #expect(try jsonObject(second.standardOutput)["profile"] as? String == "minimal")

        let text = try await runScmesh(["power", "--data-dir", data], home: directory.path)
        #expect(text.status == 0 && text.standardOutput.contains("minimal"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("60 (profile)"), "\(text.standardOutput)")
    }

    @Test("scmesh power --override and --profile hold across a node restart; bad input is refused in one line")
    func overridesAcrossRestart() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let directory = nodes.directory
        let supplies = directory.file("power_supply")
        let battery = supplies + "/BAT0"
        try FileManager.default.createDirectory(atPath: battery, withIntermediateDirectories: true)
        for (name, value) in ["type": "Battery", "status": "Discharging", "capacity": "12"] {
            try (value + "\n").write(toFile: battery + "/" + name, atomically: true, encoding: .utf8)
        }
        let first = try await nodes.startAlone(
            "node",
            ["--set", "power.supply_path=\(supplies)"]
        )
        let data = first.dataDirectory
        let set = try await runScmesh(
            ["power", "--data-dir", data, "--json", "--override", "relay_max_per_hour=77", "--profile", "high"],
            home: directory.path
        )
        #expect(set.status == 0, "\(set.standardError)")
        let reply = try jsonObject(set.standardOutput)
        #expect(reply["profile"] as? String == "high" && reply["pinned_profile"] as? String == "high")
        #expect((reply["sources"] as? [String: Any])?["relay_max_per_hour"] as? String == "override")
        #expect((reply["effective"] as? [String: Any])?["relay_max_per_hour"] as? Int == 77)

        for (arguments, named) in [
            (["--override", "ble_tx_power=3"], "ble_tx_power"), (["--profile", "turbo"], "turbo"),
        ] {
            let refused = try await runScmesh(["power", "--data-dir", data] + arguments, home: directory.path)
            #expect(refused.status != 0 && refused.standardError.contains(named), "\(refused.standardError)")
            #expect(
                refused.standardError.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").count == 1
            )
        }
        nodes.kill9(first)
        try await nodes.restart(first)
        let text = try await runScmesh(["power", "--data-dir", data], home: directory.path)
        #expect(text.status == 0 && text.standardOutput.contains("77 (override)"), "\(text.standardOutput)")
        #expect(text.standardOutput.contains("high (pinned"), "\(text.standardOutput)")

        let cleared = try await runScmesh(
            ["power", "--data-dir", data, "--clear-overrides", "--auto"],
            home: directory.path
        )
        #expect(cleared.status == 0, "\(cleared.standardError)")
        #expect(cleared.standardOutput.contains("minimal (auto)"), "\(cleared.standardOutput)")
        #expect(cleared.standardOutput.contains("60 (profile)"), "\(cleared.standardOutput)")
    }
}
