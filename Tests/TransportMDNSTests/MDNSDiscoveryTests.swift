#if canImport(CAvahi)
import Foundation
import MeshCore
import Testing
import TestSupport

@testable import TransportMDNS

/// Every test that talks to the real avahi-daemon, one at a time: one of them stops and
/// restarts the daemon. Needs `scripts/avahi/start.sh` to have run.
@Suite("With the avahi-daemon", .serialized)
struct AvahiDaemonTests {}

extension AvahiDaemonTests {
    @Suite("MDNSDiscovery")
    struct Discovery {
        typealias Events = EventCollector<MDNSDiscoveryEvent>

        private func started(
            _ options: MDNSDiscoveryOptions,
            _ label: String
        ) async throws -> (RunningDiscovery, Events) {
            let running = try await RunningDiscovery.start(options: options, logger: AvahiTestSupport.logger(label))
            return (running, Events(running.discovery.events))
        }

        private static func found(_ name: String) -> @Sendable (MDNSDiscoveryEvent) -> Bool {
            { if case .found(let s) = $0 { return s.name == name } else { return false } }
        }

        private static func lost(_ name: String) -> @Sendable (MDNSDiscoveryEvent) -> Bool {
            { if case .lost(let s) = $0 { return s.name == name } else { return false } }
        }

        private static func published(_ event: MDNSDiscoveryEvent) -> Bool {
            if case .published = event { return true } else { return false }
        }

        private func service(_ event: MDNSDiscoveryEvent) throws -> MDNSService {
            switch event {
            case .found(let s), .lost(let s): return s
            default: throw TestFailure("not a service event: \(event)")
            }
        }

        @Test("two discoveries on one host find each other with the right TXT, and not themselves")
        func twoDiscoveriesFindEachOther() async throws {
            try await AvahiTestSupport.requireDaemon()
            let peerA = PeerID.random()
            let peerB = PeerID.random()
            let nameA = AvahiTestSupport.randomName("a")
            let nameB = AvahiTestSupport.randomName("b")
            let (a, eventsA) = try await started(AvahiTestSupport.options(name: nameA, port: 40001, peer: peerA), "a")
            let (b, eventsB) = try await started(AvahiTestSupport.options(name: nameB, port: 40002, peer: peerB), "b")

            let seenByA = try service(try await eventsA.next(where: Self.found(nameB)))
            let seenByB = try service(try await eventsB.next(where: Self.found(nameA)))

            #expect(seenByA.txt.peerID == peerB)
            #expect(seenByA.txt.fields == ["v": "1", "id": peerB.hex])
            #expect(seenByA.endpoint == "127.0.0.1:40002")
            #expect(seenByA.interfaceName == "lo")
            #expect(seenByB.txt.peerID == peerA)
            #expect(seenByB.endpoint == "127.0.0.1:40001")
            #expect(
                seenByB.hint(transport: "mdns")
                    == PeerHint(
                        transport: "mdns",
                        address: "127.0.0.1:40001",
                        peerID: peerA,
                        metadata: ["v": "1", "id": peerA.hex]
                    )
            )

            #expect(try await eventsA.none(during: .milliseconds(300), where: Self.found(nameA)))
            #expect(try await eventsB.none(during: .milliseconds(1), where: Self.found(nameB)))
            await a.stop()
            await b.stop()
        }

        @Test("avahi-browse -rpt lists our service with its port and TXT")
        func avahiBrowseShowsOurService() async throws {
            try await AvahiTestSupport.requireDaemon()
            let peer = PeerID.random()
            let name = AvahiTestSupport.randomName("browse")
            let (discovery, events) = try await started(
                AvahiTestSupport.options(name: name, port: 40011, peer: peer),
                "pub"
            )
            _ = try await events.next(where: Self.published)

            let browse = try AvahiTestSupport.run(
                try AvahiTestSupport.which("avahi-browse"),
                ["-rpt", AvahiTestSupport.serviceType]
            )
            #expect(browse.status == 0)
            // =;lo;IPv4;<name>;<service type>;local;<host>;127.0.0.1;40011;"id=..." "v=1"
            let line = browse.output.split(separator: "\n").first { $0.hasPrefix("=") && $0.contains(";\(name);") }
            let fields = line.map { $0.split(separator: ";", omittingEmptySubsequences: false).map(String.init) } ?? []
            #expect(fields.count >= 10, "avahi-browse output has no resolved line for \(name): \(browse.output)")
            if fields.count >= 10 {
                #expect(fields[1] == "lo")
                #expect(fields[4] == AvahiTestSupport.serviceType)
                #expect(fields[7] == "127.0.0.1")
                #expect(fields[8] == "40011")
                #expect(fields[9].contains("\"id=\(peer.hex)\""))
                #expect(fields[9].contains("\"v=1\""))
            }
            await discovery.stop()
        }

        @Test("a service published by avahi-publish is found, and lost when it is withdrawn")
        func avahiPublishIsDiscovered() async throws {
            try await AvahiTestSupport.requireDaemon()
            let peer = PeerID.random()
            let (browser, events) = try await started(
                AvahiTestSupport.options(name: "unused", port: nil, peer: PeerID.random()),
                "browser"
            )
            let name = AvahiTestSupport.randomName("external")
            let publisher = try ChildProcess(
                executable: try AvahiTestSupport.which("avahi-publish"),
                arguments: [
                    "-s", name, AvahiTestSupport.serviceType, "40021", "v=1", "id=\(peer.hex)", "extra=yes",
                ],
                environment: ProcessInfo.processInfo.environment
            )
            defer { AvahiTestSupport.kill(publisher) }

            let found = try service(try await events.next(where: Self.found(name)))
            #expect(found.txt.peerID == peer)
            #expect(found.txt.fields["extra"] == "yes")
            #expect(found.endpoint == "127.0.0.1:40021")

            AvahiTestSupport.kill(publisher)
            let lost = try service(try await events.next(where: Self.lost(name)))
            #expect(lost == found)
            await browser.stop()
        }

        @Test("stopping a publisher withdraws its service: the browser reports it lost")
        func stopWithdraws() async throws {
            try await AvahiTestSupport.requireDaemon()
            let name = AvahiTestSupport.randomName("withdraw")
            let (publisher, _) = try await started(
                AvahiTestSupport.options(name: name, port: 40031, peer: PeerID.random()),
                "pub"
            )
            let (browser, events) = try await started(
                AvahiTestSupport.options(name: AvahiTestSupport.randomName("b"), port: nil, peer: PeerID.random()),
                "browser"
            )
            let found = try service(try await events.next(where: Self.found(name)))
            await publisher.stop()
            let lost = try service(try await events.next(where: Self.lost(name)))
            #expect(lost == found)
            await browser.stop()
        }

        @Test("a name collision is resolved with Avahi's alternative name; both services stay visible")
        func nameCollision() async throws {
            try await AvahiTestSupport.requireDaemon()
            let name = AvahiTestSupport.randomName("same")
            let peerA = PeerID.random()
            let peerB = PeerID.random()
            let (a, eventsA) = try await started(AvahiTestSupport.options(name: name, port: 40041, peer: peerA), "a")
            _ = try await eventsA.next(where: Self.published)
            let (b, eventsB) = try await started(AvahiTestSupport.options(name: name, port: 40042, peer: peerB), "b")
            let publishedB = try await eventsB.next(where: Self.published)
            #expect(publishedB == .published(name: "\(name) #2"))
            #expect(await b.discovery.currentName == "\(name) #2")

            let seenByA = try service(try await eventsA.next(where: Self.found("\(name) #2")))
            #expect(seenByA.txt.peerID == peerB)
            let seenByB = try service(try await eventsB.next(where: Self.found(name)))
            #expect(seenByB.txt.peerID == peerA)
            await a.stop()
            await b.stop()
        }

        @Test("cautious mode publishes only the protocol version")
        func cautiousOmitsIdentity() async throws {
            try await AvahiTestSupport.requireDaemon()
            let name = AvahiTestSupport.randomName("cautious")
            let (publisher, _) = try await started(
                AvahiTestSupport.options(name: name, port: 40051, peer: PeerID.random(), revealIdentity: false),
                "pub"
            )
            let (browser, events) = try await started(
                AvahiTestSupport.options(name: AvahiTestSupport.randomName("b"), port: nil, peer: PeerID.random()),
                "browser"
            )
            let found = try service(try await events.next(where: Self.found(name)))
            #expect(found.txt.fields == ["v": "1"])
            #expect(found.hint(transport: "mdns").peerID == nil)
            await publisher.stop()
            await browser.stop()
        }

        @Test("a browse-only discovery publishes nothing but finds others")
        func browseOnly() async throws {
            try await AvahiTestSupport.requireDaemon()
            let quietName = AvahiTestSupport.randomName("quiet")
            let (quiet, quietEvents) = try await started(
                AvahiTestSupport.options(name: quietName, port: nil, peer: PeerID.random()),
                "quiet"
            )
            let loudName = AvahiTestSupport.randomName("loud")
            let (loud, loudEvents) = try await started(
                AvahiTestSupport.options(name: loudName, port: 40061, peer: PeerID.random()),
                "loud"
            )
            _ = try await quietEvents.next(where: Self.found(loudName))
            _ = try await loudEvents.next(where: Self.published)
            let browse = try AvahiTestSupport.run(
                try AvahiTestSupport.which("avahi-browse"),
                ["-pt", AvahiTestSupport.serviceType]
            )
            #expect(browse.output.contains(";\(loudName);"))
            #expect(!browse.output.contains(";\(quietName);"))
            await quiet.stop()
            await loud.stop()
        }

        @Test("the interface allow-list limits publishing and results")
        func interfaceAllowList() async throws {
            try await AvahiTestSupport.requireDaemon()
            let nowhereName = AvahiTestSupport.randomName("nowhere")
            let (nowhere, nowhereEvents) = try await started(
                AvahiTestSupport.options(
                    name: nowhereName,
                    port: 40071,
                    peer: PeerID.random(),
                    interfaces: ["nosuchif0"]
                ),
                "nowhere"
            )
            let loName = AvahiTestSupport.randomName("lo")
            let (onLo, loEvents) = try await started(
                AvahiTestSupport.options(name: loName, port: 40072, peer: PeerID.random(), interfaces: ["lo"]),
                "lo"
            )
            _ = try await loEvents.next(where: Self.published)
            let browse = try AvahiTestSupport.run(
                try AvahiTestSupport.which("avahi-browse"),
                ["-pt", AvahiTestSupport.serviceType]
            )
            #expect(browse.output.contains("+;lo;IPv4;\(loName);"))
            #expect(!browse.output.contains(";\(nowhereName);"))
            #expect(try await nowhereEvents.none(during: .milliseconds(500), where: Self.found(loName)))
            await nowhere.stop()
            await onLo.stop()
        }

        @Test("no daemon at start, then a daemon restart: discovery waits, republishes and finds again")
        func recoversFromDaemonAbsenceAndRestart() async throws {
            try await AvahiTestSupport.requireDaemon()
            try AvahiTestSupport.loopback("stop-avahi")
            var restarted = false
            defer { if !restarted { try? AvahiTestSupport.loopback("start-avahi") } }

            // No daemon and wait_for_daemon false: start fails with one clear reason.
            var strict = AvahiTestSupport.options(name: "strict", port: 40081, peer: PeerID.random())
            strict.waitForDaemon = false
            let refusing = try MDNSDiscovery(options: strict, logger: AvahiTestSupport.logger("strict"))
            let error = await #expect(throws: MeshError.self) { try await refusing.start() }
            #expect(error?.code == .transportUnavailable)

            // No daemon, waiting: start succeeds and reports nothing yet.
            let nameA = AvahiTestSupport.randomName("early")
            let (a, eventsA) = try await started(
                AvahiTestSupport.options(name: nameA, port: 40082, peer: PeerID.random()),
                "a"
            )
            #expect(try await eventsA.none(during: .milliseconds(300), where: Self.published))

            try AvahiTestSupport.loopback("start-avahi")
            _ = try await eventsA.next(where: { $0 == .daemon(available: true) })
            _ = try await eventsA.next(where: Self.published)
            let nameB = AvahiTestSupport.randomName("late")
            let (b, eventsB) = try await started(
                AvahiTestSupport.options(name: nameB, port: 40083, peer: PeerID.random()),
                "b"
            )
            _ = try await eventsA.next(where: Self.found(nameB))
            _ = try await eventsB.next(where: Self.found(nameA))

            // The daemon restarts: both lose each other, then publish and find again.
            try AvahiTestSupport.loopback("stop-avahi")
            _ = try await eventsA.next(where: { $0 == .daemon(available: false) })
            _ = try await eventsA.next(where: Self.lost(nameB))
            try AvahiTestSupport.loopback("start-avahi")
            restarted = true
            _ = try await eventsA.next(where: Self.published)
            _ = try await eventsA.next(where: Self.found(nameB))
            _ = try await eventsB.next(where: Self.found(nameA))
            await a.stop()
            await b.stop()
        }
    }
}

#endif
