#if canImport(CAvahi)
import MeshCore
import MeshTesting
import TestSupport
import Testing

@testable import TransportMDNS

extension AvahiDaemonTests {
    /// Browsing in windows (a power profile's ``TransportPacing/browseInterval``), on a
    /// manual clock against the real avahi-daemon: between two windows there is no
    /// browser and a new service is not found; the next window finds it; a service gone
    /// while the browser was closed is reported lost when the window after closes.
    @Suite("MDNSDiscovery browse windows")
    struct BrowseWindows {
        private static func found(_ name: String) -> @Sendable (MDNSDiscoveryEvent) -> Bool {
            { if case .found(let s) = $0 { return s.name == name } else { return false } }
        }

        private static func lost(_ name: String) -> @Sendable (MDNSDiscoveryEvent) -> Bool {
            { if case .lost(let s) = $0 { return s.name == name } else { return false } }
        }

        @Test(.timeLimit(.minutes(3))) func aPacedDiscoveryBrowsesOnlyInItsWindows() async throws {
            try await AvahiTestSupport.requireDaemon()
            let clock = ManualClock()
            let (nameA, nameB, nameC) = (
                AvahiTestSupport.randomName("a"), AvahiTestSupport.randomName("b"), AvahiTestSupport.randomName("c")
            )
            let a = try await RunningDiscovery.start(
                options: AvahiTestSupport.options(name: nameA, port: 40101, peer: .random()),
                logger: AvahiTestSupport.logger("a"),
                clock: clock
            )
            let events = EventCollector(a.discovery.events)
            let b = try await RunningDiscovery.start(
                options: AvahiTestSupport.options(name: nameB, port: 40102, peer: .random()),
                logger: AvahiTestSupport.logger("b")
            )
            _ = try await events.next(where: Self.found(nameB))

            // A window opens at once (a new browser: B is resolved again), and closes
            // 30 s on; B, seen in it, stays known.
            a.discovery.setBrowseInterval(.seconds(300))
            await clock.waitForSleepers(atLeast: 1)
            try await waitUntil("B resolved again in the first window") {
                await a.discovery.seenInWindow.contains { $0.name == nameB }
            }
            clock.advance(by: .seconds(30))
            await clock.waitForSleepers(atLeast: 1)
            #expect(await a.discovery.isBrowsing == false)
            #expect(await a.discovery.known.values.contains { $0.name == nameB })

            // Between windows: C appears and B goes; A hears neither.
            let c = try await RunningDiscovery.start(
                options: AvahiTestSupport.options(name: nameC, port: 40103, peer: .random()),
                logger: AvahiTestSupport.logger("c")
            )
            await b.stop()
            #expect(try await events.none(during: .seconds(2), where: Self.found(nameC)))
            #expect(try await events.none(during: .zero, where: Self.lost(nameB)))

            // The next window, 300 s after the first opened, finds C; when it closes,
            // B (not seen in it) is reported lost.
            clock.advance(by: .seconds(270))
            _ = try await events.next(where: Self.found(nameC))
            #expect(await a.discovery.isBrowsing)
            await clock.waitForSleepers(atLeast: 1)
            clock.advance(by: .seconds(30))
            _ = try await events.next(where: Self.lost(nameB))
            await clock.waitForSleepers(atLeast: 1)
            #expect(await a.discovery.known.values.contains { $0.name == nameC })

            // Back to continuous browsing: a browser is open again.
            a.discovery.setBrowseInterval(nil)
            try await waitUntil("browsing again") { await a.discovery.isBrowsing }
            await c.stop()
            await a.stop()
        }
    }
}
#endif
