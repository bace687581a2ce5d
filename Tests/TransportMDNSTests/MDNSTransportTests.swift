#if canImport(CAvahi)
import Foundation
import Logging
import MeshCore
import MeshTesting
import Testing
import TestSupport
import TransportTCP

@testable import TransportMDNS

extension AvahiDaemonTests {
    @Suite("MDNSTransport")
    struct Transport {
        typealias Events = EventCollector<TransportEvent>

        /// An mDNS transport whose `listen` runs in the background.
        struct Running {
            let transport: MDNSTransport
            let running: RunningTransport

            /// The addresses of its `.listening` event.
            var boundAddresses: [String] { running.addresses }

            func dial(_ hint: PeerHint) async throws -> any Link { try await transport.dial(hint) }

            /// Cancels `listen` and waits until it returned.
            func stop() async { await running.stop() }
        }

        private static func configuration(
            _ mode: MDNSTransport.DiscoveryMode = .normal,
            name: String = ""
        ) -> MDNSTransport.Configuration {
            MDNSTransport.Configuration(
                discoveryMode: mode,
                serviceType: AvahiTestSupport.serviceType,
                serviceName: name,
                listen: ["127.0.0.1:0"],
                ipv6: false
            )
        }

        private func started(
            _ configuration: MDNSTransport.Configuration,
            peer: PeerID,
            _ label: String
        ) async throws -> (Running, Events) {
            let transport = MDNSTransport(configuration: configuration)
            let running = try await RunningTransport.start(
                transport,
                localPeerID: peer,
                logger: AvahiTestSupport.logger(label)
            )
            return (Running(transport: transport, running: running), Events(running.events))
        }

        private static func discovered(_ peer: PeerID) -> @Sendable (TransportEvent) -> Bool {
            { if case .peerDiscovered(let hint) = $0 { return hint.peerID == peer } else { return false } }
        }

        private static func discovered(address: String) -> @Sendable (TransportEvent) -> Bool {
            { if case .peerDiscovered(let hint) = $0 { return hint.address == address } else { return false } }
        }

        private static func isInbound(_ event: TransportEvent) -> Bool {
            if case .inboundLink = event { return true } else { return false }
        }

        private func hint(_ event: TransportEvent) throws -> PeerHint {
            switch event {
            case .peerDiscovered(let hint), .peerLost(let hint): return hint
            case .inboundLink, .listening: throw TestFailure("not a hint event")
            }
        }

        private func link(_ event: TransportEvent) throws -> any Link {
            guard case .inboundLink(let link) = event else { throw TestFailure("not an inbound link") }
            return link
        }

        @Test("two transports find each other through Avahi and exchange frames, with no bootstrap")
        func twoTransportsExchangeFrames() async throws {
            try await AvahiTestSupport.requireDaemon()
            let peerA = PeerID.random()
            let peerB = PeerID.random()
            let (a, eventsA) = try await started(Self.configuration(), peer: peerA, "a")
            let (b, eventsB) = try await started(Self.configuration(), peer: peerB, "b")

            let hintB = try hint(try await eventsA.next(where: Self.discovered(peerB)))
            let hintA = try hint(try await eventsB.next(where: Self.discovered(peerA)))
            #expect(hintB.transport == "mdns")
            #expect(hintB.address == b.boundAddresses.first)
            #expect(hintB.metadata == ["v": "1", "id": peerB.hex])
            #expect(hintA.address == a.boundAddresses.first)

            let dialled = try await a.dial(hintB)
            let accepted = try link(try await eventsB.next(where: Self.isInbound))
            #expect(dialled.mtu == 65535)

            try await dialled.send(Array("hello from A".utf8))
            #expect(try await accepted.receive() == Array("hello from A".utf8))
            let big = (0..<65535).map { UInt8(truncatingIfNeeded: $0) }
            try await accepted.send(big)
            #expect(try await dialled.receive() == big)

            await dialled.close()
            #expect(try await accepted.receive() == nil)
            await a.stop()
            await b.stop()
        }

        @Test("a stopped transport's service is reported lost with the hint that was discovered")
        func stopReportsLost() async throws {
            try await AvahiTestSupport.requireDaemon()
            let peerA = PeerID.random()
            let peerB = PeerID.random()
            let (a, eventsA) = try await started(Self.configuration(), peer: peerA, "a")
            let (b, _) = try await started(Self.configuration(), peer: peerB, "b")
            let found = try hint(try await eventsA.next(where: Self.discovered(peerB)))
            await b.stop()
            let lost = try hint(
                try await eventsA.next {
                    if case .peerLost(let hint) = $0 { return hint.peerID == peerB } else { return false }
                }
            )
            #expect(lost == found)
            await a.stop()
        }

        @Test("a service published by avahi-publish for a running transport's port is discovered and dialled")
        func avahiPublishedPortIsDialled() async throws {
            try await AvahiTestSupport.requireDaemon()
            // B publishes nothing itself (paranoid); avahi-publish announces its port.
            let (b, eventsB) = try await started(Self.configuration(.paranoid), peer: PeerID.random(), "b")
            let (a, eventsA) = try await started(Self.configuration(.cautious), peer: PeerID.random(), "a")
            let address = try #require(b.boundAddresses.first)
            let port = try #require(MDNSTransport.port(of: address))

            let publisher = try ChildProcess(
                executable: try AvahiTestSupport.which("avahi-publish"),
                arguments: [
                    "-s", AvahiTestSupport.randomName("by-hand"), AvahiTestSupport.serviceType, "\(port)", "v=1",
                ],
                environment: ProcessInfo.processInfo.environment
            )
            defer { AvahiTestSupport.kill(publisher) }

            let found = try hint(try await eventsA.next(where: Self.discovered(address: address)))
            #expect(found.peerID == nil)
            #expect(found.metadata == ["v": "1"])
            let dialled = try await a.dial(found)
            let accepted = try link(try await eventsB.next(where: Self.isInbound))
            try await dialled.send([1, 2, 3])
            #expect(try await accepted.receive() == [1, 2, 3])
            await a.stop()
            await b.stop()
        }

        @Test("listen fails with one line when no daemon answers and wait_for_daemon is false; the TCP port is freed")
        func strictStartWithoutDaemon() async throws {
            try await AvahiTestSupport.requireDaemon()
            try AvahiTestSupport.loopback("stop-avahi")
            defer { try? AvahiTestSupport.loopback("start-avahi") }
            var configuration = Self.configuration()
            configuration.waitForDaemon = false
            let transport = MDNSTransport(configuration: configuration)
            let error = await #expect(throws: MeshError.self) {
                _ = try await RunningTransport.start(transport, logger: AvahiTestSupport.logger("strict"))
            }
            #expect(error?.code == .transportUnavailable)
            #expect(error?.message.contains("avahi-daemon") == true)
            #expect(transport.boundAddresses.isEmpty)
        }

        @Test(".listening carries the inner TCP listener's bound port; cancelling listen closes it and its links")
        func listeningAndCancellation() async throws {
            try await AvahiTestSupport.requireDaemon()
            let (a, _) = try await started(Self.configuration(), peer: .random(), "a")
            let (b, eventsB) = try await started(Self.configuration(), peer: .random(), "b")
            let address = try #require(b.boundAddresses.first)
            #expect(b.boundAddresses == b.transport.boundAddresses)
            #expect(address.hasPrefix("127.0.0.1:"))
            #expect(try #require(MDNSTransport.port(of: address)) > 0)

            let hintB = PeerHint(transport: "mdns", address: address)
            let dialled = try await a.dial(hintB)
            let accepted = try link(try await eventsB.next(where: Self.isInbound))
            try await dialled.send([7])
            #expect(try await accepted.receive() == [7])

            await b.stop()
            #expect(try await accepted.receive() == nil)
            #expect(try await dialled.receive() == nil)
            #expect(b.transport.boundAddresses.isEmpty)
            await #expect(throws: MeshError.self) { _ = try await a.dial(hintB) }
            let notRunning = await #expect(throws: MeshError.self) { _ = try await b.dial(hintB) }
            #expect(notRunning?.code == .notRunning)
            await a.stop()
        }

        @Test(
            "setDiscoveryMode at run time: paranoid withdraws the service, normal publishes it again, cautious hides the peer ID; links survive"
        )
        func discoveryModeAtRunTime() async throws {
            try await AvahiTestSupport.requireDaemon()
            let peerA = PeerID.random()
            let (a, eventsA) = try await started(Self.configuration(), peer: peerA, "a")
            // B only browses: it sees what A publishes, and nothing of its own.
            let (b, eventsB) = try await started(Self.configuration(.paranoid), peer: .random(), "b")
            let address = try #require(a.boundAddresses.first)
            let lostA: @Sendable (TransportEvent) -> Bool = {
                if case .peerLost(let hint) = $0 { return hint.address == address } else { return false }
            }
            let found = try hint(try await eventsB.next(where: Self.discovered(peerA)))
            #expect(found.address == address)
            #expect(a.transport.discoveryMode == .normal)

            // A link made before the switch stays up through it.
            let dialled = try await b.dial(found)
            let accepted = try link(try await eventsA.next(where: Self.isInbound))

            await a.transport.setDiscoveryMode(.paranoid)
            #expect(a.transport.discoveryMode == .paranoid)
            let lost = try hint(try await eventsB.next(where: lostA))
            #expect(lost.peerID == peerA)

            await a.transport.setDiscoveryMode(.normal)
            let again = try hint(try await eventsB.next(where: Self.discovered(peerA)))
            #expect(again.address == address)

            // cautious: published again, at the same address, with no peer ID.
            await a.transport.setDiscoveryMode(.cautious)
            _ = try await eventsB.next(where: lostA)
            let anonymous = try hint(try await eventsB.next(where: Self.discovered(address: address)))
            #expect(anonymous.peerID == nil)
            #expect(anonymous.metadata == ["v": "1"])

            try await dialled.send([4, 2])
            #expect(try await accepted.receive() == [4, 2])
            await dialled.close()
            await a.stop()
            await b.stop()
        }

        @Test("a discovery mode set before listen is the one it starts with")
        func discoveryModeBeforeListen() async throws {
            try await AvahiTestSupport.requireDaemon()
            let peerA = PeerID.random()
            let transport = MDNSTransport(configuration: Self.configuration(.paranoid))
            await transport.setDiscoveryMode(.normal)
            let running = try await RunningTransport.start(
                transport,
                localPeerID: peerA,
                logger: AvahiTestSupport.logger("a")
            )
            let (b, eventsB) = try await started(Self.configuration(.paranoid), peer: .random(), "b")
            let found = try hint(try await eventsB.next(where: Self.discovered(peerA)))
            #expect(found.address == running.addresses.first)
            await running.stop()
            await b.stop()
        }

        @Test("the transport conformance suite, over links to mDNS-discovered hints")
        func conformance() async throws {
            try await AvahiTestSupport.requireDaemon()
            try await TransportConformance.run(try .mdns())
        }
    }
}

extension TransportConformance.Harness {
    /// mDNS transports on fixed free loopback ports (so a restarted side B listens where it
    /// did), each publishing a unique service name. The hint for B is the one a separate
    /// browser resolves for B's service, so every check dials an mDNS-discovered address.
    /// Malformed input is a raw socket writing a 0xFFFF length prefix and garbage.
    static func mdns() throws -> Self {
        let ports = [try freeLoopbackPort(), try freeLoopbackPort()]
        let names = [AvahiTestSupport.randomName("conf-a"), AvahiTestSupport.randomName("conf-b")]
        let deadPort = try freeLoopbackPort()
        return Self(
            makeTransport: { index in
                MDNSTransport(
                    configuration: .init(
                        serviceType: AvahiTestSupport.serviceType,
                        serviceName: names[index],
                        listen: ["127.0.0.1:\(ports[index])"],
                        ipv6: false
                    )
                )
            },
            hint: { _, index in
                let options = AvahiTestSupport.options(name: "unused", port: nil, peer: .random())
                let browser = try await RunningDiscovery.start(
                    options: options,
                    logger: AvahiTestSupport.logger("conformance")
                )
                let events = EventCollector(browser.discovery.events)
                let event = try await events.next {
                    if case .found(let service) = $0 { return service.name == names[index] } else { return false }
                }
                await browser.stop()
                guard case .found(let service) = event else { throw TestFailure("no service") }
                return service.hint(transport: "mdns")
            },
            deadHint: PeerHint(transport: "mdns", address: "127.0.0.1:\(deadPort)"),
            injectMalformed: { hint in
                let port = try #require(MDNSTransport.port(of: hint.address))
                let client = try RawTCPClient(port: Int(port))
                try client.write([0xFF, 0xFF] + (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
                client.finishWriting()
                _ = await client.closedByServer()
            }
        )
    }
}

#endif
