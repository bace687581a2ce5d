import Foundation
import Logging
import MeshCore
import MeshNode
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportLoopback

/// Issue 46's pacing: a profile's BLE scan and advertising values and keepalive reach
/// the transports through ``Transport/apply(_:)`` from the monitor's run loop; the
/// `ble_scan_interval_ms` override holds across a profile change and a restart.
@Suite("power pacing")
struct PowerPacingTests {
    /// The pacings a monitor handed over, in order.
    final class Applied: Sendable {
        let values = Mutex<[TransportPacing]>([])
        var last: TransportPacing? { values.withLock { $0.last } }
    }

    static func monitor(
        path: String,
        applied: Applied,
        clock: ManualClock,
        dataDirectory: String? = nil
    )
        -> PowerMonitor
    {
        PowerTests.monitor(
            path: path,
            budget: PowerTests.Budget(10_000),
            clock: clock,
            dataDirectory: dataDirectory,
            applyPacing: { pacing in applied.values.withLock { $0.append(pacing) } }
        )
    }

    @Test("a battery at 12 % paces BLE and keepalive as minimal; charging at 95 % goes back to the configured values")
    func profilePacing() async throws {
        let tree = try RelayLimitsNodeTests.supplies(PowerTests.discharging12)
        defer { tree.cleanUp() }
        let clock = ManualClock()
        let applied = Applied()
        let monitor = Self.monitor(path: tree.path, applied: applied, clock: clock)
        let running = Task { try await monitor.run() }
        defer { running.cancel() }
        let minimal = try await eventuallyValue("the minimal pacing applied") { applied.last }
        #expect(minimal == PowerProfile.minimal.pacing)
        #expect(minimal.scanInterval == .milliseconds(4000) && minimal.keepaliveInterval == .seconds(300))
        let reply = monitor.poll()
        #expect(reply.effective.bleScanIntervalMs == 4000 && reply.effective.keepaliveIntervalMs == 300_000)
        #expect(reply.sources.bleScanIntervalMs == .profile && reply.sources.pacing == .profile)

        try "95\n".write(toFile: tree.file("BAT0") + "/capacity", atomically: true, encoding: .utf8)
        try "Charging\n".write(toFile: tree.file("BAT0") + "/status", atomically: true, encoding: .utf8)
        clock.advance(by: .seconds(60))
        let maximum = try await eventuallyValue("the configured pacing again") {
            applied.last == .configured ? applied.last : nil
        }
        #expect(maximum.scanInterval == nil && maximum.keepaliveInterval == nil)
        #expect(monitor.poll().sources.pacing == .config)
    }

    @Test("ble_scan_interval_ms holds across a profile change and a restart; clearing it restores the profile's")
    func scanOverride() async throws {
        let tree = try RelayLimitsNodeTests.supplies(PowerTests.discharging12)
        defer { tree.cleanUp() }
        let data = try TemporaryDirectory()
        defer { data.cleanUp() }
        let clock = ManualClock()
        let first = Self.monitor(path: tree.path, applied: Applied(), clock: clock, dataDirectory: data.path)
        let set = try first.setOverride("ble_scan_interval_ms=800")
        #expect(set.effective.bleScanIntervalMs == 800 && set.sources.bleScanIntervalMs == .override)
        #expect(set.overrides == ["ble_scan_interval_ms": 800])
        try "60\n".write(toFile: tree.file("BAT0") + "/capacity", atomically: true, encoding: .utf8)
        let changed = first.poll()
        #expect(changed.profile == .standard && changed.effective.bleScanIntervalMs == 800)
        #expect(changed.effective.bleAdvertisingIntervalMs == 500, "the rest follows the profile")
        for bad in ["ble_scan_interval_ms=0", "ble_scan_interval_ms=20000", "ble_scan_interval_ms=fast"] {
            #expect(throws: MeshError.self, "\(bad)") { try first.setOverride(bad) }
        }

        let applied = Applied()
        let second = Self.monitor(path: tree.path, applied: applied, clock: clock, dataDirectory: data.path)
        let running = Task { try await second.run() }
        defer { running.cancel() }
        let restarted = try await eventuallyValue("the restarted monitor's pacing") { applied.last }
        #expect(restarted.scanInterval == .milliseconds(800) && restarted.advertisingInterval == .milliseconds(500))

        let cleared = try second.clearOverrides()
        #expect(cleared.effective.bleScanIntervalMs == 500 && cleared.sources.bleScanIntervalMs == .profile)
        let back = try await eventuallyValue("the profile's scan interval applied") {
            applied.last?.scanInterval == .milliseconds(500) ? applied.last : nil
        }
        #expect(back == PowerProfile.standard.pacing)
    }

    /// A loopback transport that records the pacing it was given.
    struct PacedTransport: Transport {
        let inner: LoopbackTransport
        let paced = Applied()
        var name: String { inner.name }
        var capabilities: TransportCapabilities { inner.capabilities }
        func listen(context: TransportContext) async throws { try await inner.listen(context: context) }
        func dial(_ hint: PeerHint) async throws -> any Link { try await inner.dial(hint) }
        func apply(_ pacing: TransportPacing) async { paced.values.withLock { $0.append(pacing) } }
    }

    @Test("the router hands pacing to running transports and to one that starts later, first")
    func routerPacing() async throws {
        let network = LoopbackNetwork()
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: .random()),
            logger: Logger(label: "pacing-test")
        )
        let running = PacedTransport(inner: LoopbackTransport(name: "lo", address: "A", network: network))
        await router.add(running, priority: 10)
        let task = Task { try await router.run() }
        defer { task.cancel() }
        let pacing = PowerProfile.reduced.pacing
        await router.setPacing(pacing)
        #expect(running.paced.last == pacing)
        #expect(await router.pacing() == pacing)

        try await router.disableTransport(named: "lo")
        let later = PacedTransport(inner: LoopbackTransport(name: "lo", address: "A", network: network))
        try await router.enableTransport(later)
        let first = try await eventuallyValue("the transport enabled later paced") { later.paced.last }
        #expect(first == pacing, "a transport enabled later starts paced")
        await router.setPacing(TransportPacing.configured)
        #expect(later.paced.last == .configured)
        await router.shutdown()
    }
}
