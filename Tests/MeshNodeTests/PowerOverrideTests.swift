import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

/// Issue 46's overrides: `scmesh power --override`, `--clear-overrides`, `--profile`
/// and `--auto` on the monitor over a fake power_supply tree, saved in the data
/// directory across a monitor restart, and the `power_profile_changed` event.
@Suite("power overrides and pinned profiles")
struct PowerOverrideTests {
    static func setCapacity(_ tree: TemporaryDirectory, _ percent: Int) throws {
        try "\(percent)\n".write(toFile: tree.file("BAT0") + "/capacity", atomically: true, encoding: .utf8)
    }

    @Test("an override holds across a profile change; clearing it restores the profile's value")
    func overrideHoldsAndClears() throws {
        let tree = try RelayLimitsNodeTests.supplies([
            "BAT0": ["type": "Battery", "status": "Discharging", "capacity": "90"]
        ])
        defer { tree.cleanUp() }
        let budget = PowerTests.Budget(10_000)
        let monitor = PowerTests.monitor(path: tree.path, budget: budget, clock: ManualClock())
        #expect(monitor.poll().profile == .high && budget.current == 2000)

        let set = try monitor.setOverride("relay_max_per_hour=150")
        #expect(budget.current == 150)
        #expect(set.effective.relayMaxPerHour == 150 && set.sources.relayMaxPerHour == .override)
        #expect(set.overrides == ["relay_max_per_hour": 150])

        try Self.setCapacity(tree, 12)
        let changed = monitor.poll()
        #expect(changed.profile == .minimal)
        #expect(
            budget.current == 150 && changed.sources.relayMaxPerHour == .override,
            "the override outlives the change"
        )

        let cleared = try monitor.clearOverrides()
        #expect(budget.current == 60)
        #expect(cleared.sources.relayMaxPerHour == .profile && cleared.overrides.isEmpty)
    }

    @Test("a pinned profile applies whatever the battery says; auto goes back to the state's profile")
    func pinAndAuto() throws {
        let tree = try RelayLimitsNodeTests.supplies(PowerTests.discharging12)
        defer { tree.cleanUp() }
        let budget = PowerTests.Budget(10_000)
        let monitor = PowerTests.monitor(path: tree.path, budget: budget, clock: ManualClock())
        #expect(monitor.poll().profile == .minimal && budget.current == 60)

        let pinned = try monitor.pin(.standard)
        #expect(pinned.profile == .standard && pinned.pinnedProfile == .standard)
        #expect(budget.current == 1000)
        try Self.setCapacity(tree, 95)
        #expect(monitor.poll().profile == .standard && budget.current == 1000, "the pin ignores the battery")

        let unpinned = try monitor.pin(nil)
        #expect(unpinned.profile == .high && unpinned.pinnedProfile == nil)
        #expect(budget.current == 2000)
    }

    @Test("a pinned profile applies even with auto_adjust off")
    func pinWithAutoAdjustOff() throws {
        let tree = try RelayLimitsNodeTests.supplies(PowerTests.discharging12)
        defer { tree.cleanUp() }
        let budget = PowerTests.Budget(10_000)
        let monitor = PowerTests.monitor(path: tree.path, budget: budget, clock: ManualClock(), autoAdjust: false)
        #expect(monitor.poll().sources.relayMaxPerHour == .config && budget.current == 10_000)
        try monitor.pin(.reduced)
        #expect(budget.current == 300)
        try monitor.pin(nil)
        #expect(budget.current == 10_000, "unpinned, the config's value is back")
    }

    @Test("overrides and the pin are saved in the data directory and hold across a restart")
    func persistence() throws {
        let tree = try RelayLimitsNodeTests.supplies(PowerTests.discharging12)
        defer { tree.cleanUp() }
        let data = try TemporaryDirectory()
        defer { data.cleanUp() }
        let first = PowerTests.monitor(
            path: tree.path,
            budget: PowerTests.Budget(10_000),
            clock: ManualClock(),
            dataDirectory: data.path
        )
        try first.setOverride("relay_max_per_hour=150")
        try first.pin(.high)
        let saved = try SavedSettings.load(dataDirectory: data.path)
        #expect(saved.powerOverrideRelayMaxPerHour == 150 && saved.powerProfile == .high)

        let budget = PowerTests.Budget(10_000)
        let second = PowerTests.monitor(path: tree.path, budget: budget, clock: ManualClock(), dataDirectory: data.path)
        let reply = second.poll()
        #expect(reply.profile == .high && reply.pinnedProfile == .high)
        #expect(budget.current == 150 && reply.sources.relayMaxPerHour == .override)

        try second.clearOverrides()
        try second.pin(nil)
        #expect(budget.current == 60)
        #expect(!FileManager.default.fileExists(atPath: SavedSettings.path(dataDirectory: data.path)))
        let third = PowerTests.monitor(
            path: tree.path,
            budget: PowerTests.Budget(10_000),
            clock: ManualClock(),
            dataDirectory: data.path
        )
        let after = third.poll()
        #expect(after.pinnedProfile == nil && after.overrides.isEmpty && after.profile == .minimal)
    }

    @Test(
        "an unknown key or a bad value is refused in one line naming it",
        arguments: [
            ("ble_tx_power=3", "ble_tx_power"), ("relay_max_per_hour=lots", "lots"),
            ("relay_max_per_hour=-1", "-1"), ("relay_max_per_hour", "KEY=VALUE"),
        ]
    )
    func refusals(assignment: String, named: String) throws {
        let tree = try RelayLimitsNodeTests.supplies(PowerTests.discharging12)
        defer { tree.cleanUp() }
        let budget = PowerTests.Budget(10_000)
        let monitor = PowerTests.monitor(path: tree.path, budget: budget, clock: ManualClock())
        monitor.poll()
        let error = try #require(throws: MeshError.self) { try monitor.setOverride(assignment) }
        #expect(error.message.contains(named) && !error.message.contains("\n"), "\(error.message)")
        #expect(budget.current == 60, "nothing changed")
    }

    @Test("each profile change after the first read is a power_profile_changed event")
    func profileChangedEvent() throws {
        let tree = try RelayLimitsNodeTests.supplies(PowerTests.discharging12)
        defer { tree.cleanUp() }
        let events = EventLog()
        let monitor = PowerTests.monitor(
            path: tree.path,
            budget: PowerTests.Budget(10_000),
            clock: ManualClock(),
            events: events
        )
        monitor.poll()
        #expect(events.entries(after: 0).entries.isEmpty)
        try Self.setCapacity(tree, 95)
        monitor.poll()
        monitor.poll()
        let entries = events.entries(after: 0).entries.map(\.event)
        #expect(entries.count == 1)
        #expect(entries.first?.kind == RouterEvent.Kind("power_profile_changed"))
        #expect(entries.first?.from == "minimal" && entries.first?.to == "high")
        #expect(entries.first?.reason?.contains("95") == true)
    }
}
