import MeshCore
import Testing
import TransportTCP

/// Listening, dialling, limits, hostile peers and bootstrap hints on real loopback sockets.
@Suite(.timeLimit(.minutes(1)))
struct TCPTransportTests {
    @Test func dialToADeadPortFails() async throws {
        let client = TCPTransport(configuration: .init(listen: []))
        try await client.start(context: context())
        let port = try freePort()
        await expectMeshError(.dialFailed) {
            _ = try await client.dial(PeerHint(transport: "tcp", address: "127.0.0.1:\(port)"))
        }
        await expectMeshError(.invalidArgument) {
            _ = try await client.dial(PeerHint(transport: "tcp", address: "not an address"))
        }
        await client.stop()
        await expectMeshError(.notRunning) {
            _ = try await client.dial(PeerHint(transport: "tcp", address: "127.0.0.1:\(port)"))
        }
    }

    @Test func dialAnUnresolvableNameFails() async throws {
        let client = TCPTransport(configuration: .init(listen: [], connectTimeoutMilliseconds: 2000))
        try await client.start(context: context())
        await expectMeshError(.dialFailed) {
            _ = try await client.dial(PeerHint(transport: "tcp", address: "no-such-host.invalid:7420"))
        }
        await client.stop()
    }

    @Test func dialByDNSName() async throws {
        let server = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"]))
        let events = EventLog(server)
        try await server.start(context: context())
        let port = try TCPAddress(#require(server.boundAddresses.first)).port
        let client = TCPTransport(configuration: .init(listen: []))
        try await client.start(context: context())
        let link = try await client.dial(PeerHint(transport: "tcp", address: "localhost:\(port)"))
        let accepted = try await events.nextInboundLink()
        try await link.send([42])
        #expect(try await accepted.receive() == [42])
        await client.stop()
        await server.stop()
    }

    @Test func ipv6LoopbackWithAZone() async throws {
        let server = TCPTransport(configuration: .init(listen: ["[::1]:0"]))
        let events = EventLog(server)
        do {
            try await server.start(context: context())
        } catch let error as MeshError where error.code == .transportUnavailable {
            withKnownIssue("this host has no IPv6 loopback: \(error.message)") { throw error }
            return
        }
        let bound = try #require(server.boundAddresses.first)
        #expect(bound.hasPrefix("[::1]:"))
        let port = try TCPAddress(bound).port
        let client = TCPTransport(configuration: .init(listen: []))
        try await client.start(context: context())
        // The zone syntax the mDNS transport uses for link-local addresses.
        let link = try await client.dial(PeerHint(transport: "tcp", address: "[::1%lo]:\(port)"))
        let accepted = try await events.nextInboundLink()
        try await accepted.send([6])
        #expect(try await link.receive() == [6])
        await expectMeshError(.invalidArgument) {
            _ = try await client.dial(PeerHint(transport: "tcp", address: "[fe80::1%nosuchif0]:\(port)"))
        }
        await client.stop()
        await server.stop()
    }

    @Test func restartOnTheSamePortThenDialWorks() async throws {
        let port = try freePort()
        let client = TCPTransport(configuration: .init(listen: []))
        try await client.start(context: context())
        for round in 0..<2 {
            let server = TCPTransport(configuration: .init(listen: ["127.0.0.1:\(port)"]))
            let events = EventLog(server)
            try await server.start(context: context())
            #expect(server.boundAddresses == ["127.0.0.1:\(port)"])
            let link = try await client.dial(PeerHint(transport: "tcp", address: "127.0.0.1:\(port)"))
            let accepted = try await events.nextInboundLink()
            try await link.send([UInt8(round)])
            #expect(try await accepted.receive() == [UInt8(round)])
            // Stopping the listener with a link open leaves TIME_WAIT state behind.
            await server.stop()
            #expect(try await within("the link to end") { try await link.receive() } == nil)
        }
        await expectMeshError(.dialFailed) {
            _ = try await client.dial(PeerHint(transport: "tcp", address: "127.0.0.1:\(port)"))
        }
        await client.stop()
    }

    @Test func startFailsInOneLineWhenNothingCanBind() async throws {
        let first = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"]))
        try await first.start(context: context())
        let taken = try #require(first.boundAddresses.first)
        let second = TCPTransport(configuration: .init(listen: [taken]))
        do {
            try await second.start(context: context())
            Issue.record("a second listener bound \(taken)")
        } catch let error as MeshError {
            #expect(error.code == .transportUnavailable)
            #expect(error.message.contains(taken))
            #expect(!error.message.contains("\n"))
        }
        // One good address is enough; the bad one is logged.
        let capture = LogCapture()
        let third = TCPTransport(configuration: .init(listen: [taken, "127.0.0.1:0"]))
        try await third.start(context: context(capture))
        #expect(third.boundAddresses.count == 1)
        #expect(capture.messages.contains { $0.contains("cannot listen on \(taken)") })
        await third.stop()
        await first.stop()
    }

    @Test func bootstrapEntriesAreReportedAsHints() async throws {
        let entries = ["seed.example.org:7420", "127.0.0.1:7421", "[::1]:7422"]
        let transport = TCPTransport(configuration: .init(listen: [], bootstrap: entries))
        let events = EventLog(transport)
        try await transport.start(context: context())
        let hints = try await eventually("three hints") { events.discovered.count == 3 ? events.discovered : nil }
        #expect(hints.map(\.address) == entries)
        #expect(hints.allSatisfy { $0.transport == "tcp" && $0.peerID == nil })
        await transport.stop()
    }

    @Test func startRejectsAnInvalidConfiguration() async throws {
        let transport = TCPTransport(configuration: .init(maxFrameSize: 70_000))
        await expectMeshError(.invalidConfiguration) { try await transport.start(context: context()) }
    }

    /// A peer announcing a frame over max_frame_size is cut off with a log line, while a
    /// well-behaved link on the same transport keeps working.
    @Test func oversizedLengthPrefixClosesOnlyThatLink() async throws {
        let capture = LogCapture()
        let pair = try await LinkedPair.make(
            server: .init(listen: ["127.0.0.1:0"], maxFrameSize: 1024),
            client: .init(listen: [], maxFrameSize: 1024),
            capture: capture
        )
        let port = try TCPAddress(#require(pair.server.boundAddresses.first)).port

        let good = Task {
            for index in 0..<200 {
                try await pair.dialed.send([UInt8(truncatingIfNeeded: index)])
                let echoed = try await pair.accepted.receive()
                #expect(echoed == [UInt8(truncatingIfNeeded: index)])
            }
        }
        let hostile = try RawClient(port: port)
        let hostileLink = try await pair.serverEvents.nextInboundLink()
        hostile.write([0x00, 0x02, 0xCA, 0xFE])  // one valid frame first
        hostile.write([0xFF, 0xFF] + [UInt8](repeating: 0x41, count: 3000))
        #expect(await hostile.closedByServer())
        #expect(try await hostileLink.receive() == [0xCA, 0xFE])
        await expectMeshError(.malformedFrame) { _ = try await hostileLink.receive() }
        #expect(capture.messages.contains { $0.contains("65535-byte frame") && $0.contains("max_frame_size") })

        try await good.value
        try await pair.accepted.send([1])
        #expect(try await pair.dialed.receive() == [1])
        await pair.stop()
    }

    /// A 0xFFFF length prefix (valid at the default 64 KiB limit) followed by a little
    /// garbage and EOF: the link fails as malformed, the transport keeps serving.
    @Test func truncatedFrameThenEOFIsMalformed() async throws {
        let pair = try await LinkedPair.make()
        let port = try TCPAddress(#require(pair.server.boundAddresses.first)).port
        let hostile = try RawClient(port: port)
        let hostileLink = try await pair.serverEvents.nextInboundLink()
        hostile.write([0xFF, 0xFF] + (0..<100).map { UInt8($0) })
        hostile.finishWriting()
        await expectMeshError(.malformedFrame) { _ = try await hostileLink.receive() }
        #expect(await hostile.closedByServer())
        try await pair.dialed.send([3])
        #expect(try await pair.accepted.receive() == [3])
        await pair.stop()
    }

    @Test func maxInboundRefusesTheExtraConnection() async throws {
        let capture = LogCapture()
        let server = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"], maxInbound: 2))
        let events = EventLog(server)
        try await server.start(context: context(capture))
        let port = try TCPAddress(#require(server.boundAddresses.first)).port
        let first = try RawClient(port: port)
        let second = try RawClient(port: port)
        // Children are set up on several event loops, so links may arrive in any order.
        let links = [try await events.nextInboundLink(), try await events.nextInboundLink()]
        let secondLink = try #require(links.first { $0.remoteAddress == second.localAddress })
        let third = try RawClient(port: port)
        #expect(await third.closedByServer())
        #expect(capture.messages.contains { $0.contains("refused") && $0.contains("max_inbound (2)") })
        #expect(events.inboundLinkCount == 2)

        // Closing one frees a slot.
        await secondLink.close()
        #expect(await second.closedByServer())
        let fourth = try RawClient(port: port)
        _ = try await events.nextInboundLink()
        #expect(events.inboundLinkCount == 3)
        _ = (first, fourth)
        await server.stop()
        #expect(await first.closedByServer())
    }

    @Test func maxPerAddressRefusesTheExtraConnection() async throws {
        let capture = LogCapture()
        let server = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"], maxInbound: 10, maxPerAddress: 1))
        let events = EventLog(server)
        try await server.start(context: context(capture))
        let port = try TCPAddress(#require(server.boundAddresses.first)).port
        let first = try RawClient(port: port)
        let firstLink = try await events.nextInboundLink()
        let second = try RawClient(port: port)
        #expect(await second.closedByServer())
        #expect(capture.messages.contains { $0.contains("max_per_address (1)") && $0.contains("127.0.0.1") })
        // When the remote goes away its slot is freed.
        first.finishWriting()
        #expect(try await within("the first link to end") { try await firstLink.receive() } == nil)
        var probes: [RawClient] = []
        for _ in 0..<50 where events.inboundLinkCount < 2 {
            probes.append(try RawClient(port: port))
            _ = try? await eventually("the probe to be admitted", seconds: 0.2) {
                events.inboundLinkCount == 2 ? true : nil
            }
        }
        #expect(events.inboundLinkCount == 2)
        await server.stop()
        for probe in probes { #expect(await probe.closedByServer()) }
    }
}
