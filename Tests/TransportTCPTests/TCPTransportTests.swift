import MeshCore
import MeshTesting
import TestSupport
import Testing
import TransportTCP

/// Listening, dialling, limits, hostile peers and bootstrap hints on real loopback sockets.
@Suite(.timeLimit(.minutes(3)))
struct TCPTransportTests {
    @Test func dialToADeadPortFails() async throws {
        let client = try await Listening.start(.init(listen: []))
        let port = try freeLoopbackPort()
        await expectMeshError(.dialFailed) { _ = try await client.dial("127.0.0.1:\(port)") }
        await expectMeshError(.invalidArgument) { _ = try await client.dial("not an address") }
        await client.stop()
        await expectMeshError(.notRunning) { _ = try await client.dial("127.0.0.1:\(port)") }
    }

    @Test func dialBeforeListenIsNotRunning() async throws {
        let transport = TCPTransport(configuration: .init(listen: []))
        await expectMeshError(.notRunning) {
            _ = try await transport.dial(PeerHint(transport: "tcp", address: "127.0.0.1:7420"))
        }
    }

    @Test func dialAnUnresolvableNameFails() async throws {
        let client = try await Listening.start(.init(listen: [], connectTimeoutMilliseconds: 2000))
        await expectMeshError(.dialFailed) { _ = try await client.dial("no-such-host.invalid:7420") }
        await client.stop()
    }

    @Test func dialByDNSName() async throws {
        let server = try await Listening.start(.init(listen: ["127.0.0.1:0"]))
        let client = try await Listening.start(.init(listen: []))
        let link = try await client.dial("localhost:\(try server.port)")
        let accepted = try await server.events.nextInboundLink()
        try await link.send([42])
        #expect(try await accepted.receive() == [42])
        await client.stop()
        await server.stop()
    }

    /// With port 0, `.listening` carries the port the kernel chose, and that is where a
    /// dial lands.
    @Test func listeningReportsTheBoundPort() async throws {
        let server = try await Listening.start(.init(listen: ["127.0.0.1:0"]))
        let address = try server.address
        #expect(server.running.addresses.count == 1)
        #expect(address.hasPrefix("127.0.0.1:"))
        #expect(try server.port > 0)
        #expect(server.transport.boundAddresses == [address])
        let client = try await Listening.start(.init(listen: []))
        #expect(client.running.addresses == [])
        let link = try await client.dial(address)
        let accepted = try await server.events.nextInboundLink()
        try await link.send([5])
        #expect(try await accepted.receive() == [5])
        await client.stop()
        await server.stop()
    }

    /// Cancelling `listen` makes it return, closes the listener (a dial then fails) and
    /// every link; the transport cannot listen a second time.
    @Test func cancellingListenClosesTheListenerAndLinks() async throws {
        let server = TCPTransport(configuration: .init(listen: ["127.0.0.1:0"]))
        let client = try await Listening.start(.init(listen: []))
        let (events, sink) = AsyncStream.makeStream(of: TransportEvent.self)
        let context = TransportContext(localPeerID: .random(), logger: LogCapture().logger()) { sink.yield($0) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.listen(context: context) }
            var iterator = events.makeAsyncIterator()
            guard case .listening(let addresses) = await iterator.next(), let address = addresses.first else {
                Issue.record("the first event was not .listening")
                group.cancelAll()
                return
            }
            let link = try await client.dial(address)
            guard case .inboundLink(let accepted) = await iterator.next() else {
                Issue.record("no inbound link")
                group.cancelAll()
                return
            }
            try await link.send([1])
            #expect(try await accepted.receive() == [1])

            group.cancelAll()
            try await group.waitForAll()  // listen returned

            #expect(try await accepted.receive() == nil)
            #expect(try await within("the dialled end to see the end") { try await link.receive() } == nil)
            await expectMeshError(.dialFailed) { _ = try await client.dial(address) }
            #expect(server.boundAddresses.isEmpty)
            await expectMeshError(.invalidArgument) { try await server.listen(context: context) }
        }
        await client.stop()
    }

    @Test func ipv6LoopbackWithAZone() async throws {
        let server: Listening
        do {
            server = try await Listening.start(.init(listen: ["[::1]:0"]))
        } catch let error as MeshError where error.code == .transportUnavailable {
            withKnownIssue("this host has no IPv6 loopback: \(error.message)") { throw error }
            return
        }
        let bound = try server.address
        #expect(bound.hasPrefix("[::1]:"))
        let port = try TCPAddress(bound).port
        let client = try await Listening.start(.init(listen: []))
        // The zone syntax the mDNS transport uses for link-local addresses.
        let link = try await client.dial("[::1%lo]:\(port)")
        let accepted = try await server.events.nextInboundLink()
        try await accepted.send([6])
        #expect(try await link.receive() == [6])
        await expectMeshError(.invalidArgument) { _ = try await client.dial("[fe80::1%nosuchif0]:\(port)") }
        await client.stop()
        await server.stop()
    }

    @Test func restartOnTheSamePortThenDialWorks() async throws {
        let port = try freeLoopbackPort()
        let client = try await Listening.start(.init(listen: []))
        for round in 0..<2 {
            let server = try await Listening.start(.init(listen: ["127.0.0.1:\(port)"]))
            #expect(server.running.addresses == ["127.0.0.1:\(port)"])
            let link = try await client.dial("127.0.0.1:\(port)")
            let accepted = try await server.events.nextInboundLink()
            try await link.send([UInt8(round)])
            #expect(try await accepted.receive() == [UInt8(round)])
            // Stopping the listener with a link open leaves TIME_WAIT state behind.
            await server.stop()
            #expect(try await within("the link to end") { try await link.receive() } == nil)
        }
        await expectMeshError(.dialFailed) { _ = try await client.dial("127.0.0.1:\(port)") }
        await client.stop()
    }

    @Test func listenFailsInOneLineWhenNothingCanBind() async throws {
        let first = try await Listening.start(.init(listen: ["127.0.0.1:0"]))
        let taken = try first.address
        do {
            let second = try await Listening.start(.init(listen: [taken]))
            Issue.record("a second listener bound \(taken)")
            await second.stop()
        } catch let error as MeshError {
            #expect(error.code == .transportUnavailable)
            #expect(error.message.contains(taken))
            #expect(!error.message.contains("\n"))
        }
        // One good address is enough; the bad one is logged.
        let capture = LogCapture()
        let third = try await Listening.start(.init(listen: [taken, "127.0.0.1:0"]), capture: capture)
        #expect(third.running.addresses.count == 1)
        #expect(third.running.addresses != [taken])
        #expect(capture.messages.contains { $0.contains("cannot listen on \(taken)") })
        await third.stop()
        await first.stop()
    }

    @Test func bootstrapEntriesAreReportedAsHints() async throws {
        let entries = ["seed.example.org:7420", "127.0.0.1:7421", "[::1]:7422"]
        let transport = try await Listening.start(.init(listen: [], bootstrap: entries))
        let hints = try await eventuallyValue("three hints") {
            transport.events.discovered.count == 3 ? transport.events.discovered : nil
        }
        #expect(hints.map(\.address) == entries)
        #expect(hints.allSatisfy { $0.transport == "tcp" && $0.peerID == nil })
        await transport.stop()
    }

    @Test func listenRejectsAnInvalidConfiguration() async throws {
        await expectMeshError(.invalidConfiguration) {
            _ = try await Listening.start(.init(maxFrameSize: 70_000))
        }
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
        let port = try pair.server.port

        let good = Task {
            for index in 0..<200 {
                try await pair.dialed.send([UInt8(truncatingIfNeeded: index)])
                let echoed = try await pair.accepted.receive()
                #expect(echoed == [UInt8(truncatingIfNeeded: index)])
            }
        }
        let hostile = try RawTCPClient(port: port)
        let hostileLink = try await pair.serverEvents.nextInboundLink()
        try hostile.write([0x00, 0x02, 0xCA, 0xFE])  // one valid frame first
        try hostile.write([0xFF, 0xFF] + [UInt8](repeating: 0x41, count: 3000))
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
        let hostile = try RawTCPClient(port: try pair.server.port)
        let hostileLink = try await pair.serverEvents.nextInboundLink()
        try hostile.write([0xFF, 0xFF] + (0..<100).map { UInt8($0) })
        hostile.finishWriting()
        await expectMeshError(.malformedFrame) { _ = try await hostileLink.receive() }
        #expect(await hostile.closedByServer())
        try await pair.dialed.send([3])
        #expect(try await pair.accepted.receive() == [3])
        await pair.stop()
    }

    @Test func maxInboundRefusesTheExtraConnection() async throws {
        let capture = LogCapture()
        let server = try await Listening.start(.init(listen: ["127.0.0.1:0"], maxInbound: 2), capture: capture)
        let events = server.events
        let port = try server.port
        let first = try RawTCPClient(port: port)
        let second = try RawTCPClient(port: port)
        // Children are set up on several event loops, so links may arrive in any order.
        let links = [try await events.nextInboundLink(), try await events.nextInboundLink()]
        let secondLink = try #require(links.first { $0.remoteAddress == second.localAddress })
        let third = try RawTCPClient(port: port)
        #expect(await third.closedByServer())
        #expect(capture.messages.contains { $0.contains("refused") && $0.contains("max_inbound (2)") })
        #expect(events.inboundLinkCount == 2)

        // Closing one frees a slot.
        await secondLink.close()
        #expect(await second.closedByServer())
        let fourth = try RawTCPClient(port: port)
        _ = try await events.nextInboundLink()
        #expect(events.inboundLinkCount == 3)
        _ = (first, fourth)
        await server.stop()
        #expect(await first.closedByServer())
    }

    @Test("a flood of refused connections writes one log line, and every refusal is counted")
    func refusalFloodIsRateLimited() async throws {
        let capture = LogCapture()
        let server = try await Listening.start(.init(listen: ["127.0.0.1:0"], maxInbound: 1), capture: capture)
        let port = try server.port
        let holder = try RawTCPClient(port: port)
        _ = try await server.events.nextInboundLink()
        let started = ContinuousClock.now
        for _ in 0..<200 {
            let extra = try RawTCPClient(port: port)
            #expect(await extra.closedByServer())
        }
        #expect(server.transport.counters["refused.max_inbound"] == 200)
        let lines = capture.messages.filter { $0.contains("refused") }.count
        let intervals = Int((ContinuousClock.now - started) / .seconds(10))
        // One line for the first refusal; the rest are counted into one summary line per
        // 10 s interval (none on an idle machine, where the loop takes well under 10 s;
        // a loaded one may cross an interval or two). A span of n whole intervals can
        // touch n + 1 interval boundaries, and the limiter's intervals need not line up
        // with this loop's start: hence + 3; and a line that says what was refused and
        // its interval's summary can both fall in one interval (2 per interval). Either
        // way 200 refusals make a handful of lines, not 200.
        #expect(lines <= 3 + 2 * intervals, "\(capture.messages)")
        #expect(capture.messages.filter { $0.contains("refused") }.count >= 1, "\(capture.messages)")
        _ = holder
        await server.stop()
    }

    @Test func maxPerAddressRefusesTheExtraConnection() async throws {
        let capture = LogCapture()
        let server = try await Listening.start(
            .init(listen: ["127.0.0.1:0"], maxInbound: 10, maxPerAddress: 1),
            capture: capture
        )
        let events = server.events
        let port = try server.port
        let first = try RawTCPClient(port: port)
        let firstLink = try await events.nextInboundLink()
        let second = try RawTCPClient(port: port)
        #expect(await second.closedByServer())
        #expect(capture.messages.contains { $0.contains("max_per_address (1)") && $0.contains("127.0.0.1") })
        // When the remote goes away its slot is freed.
        first.finishWriting()
        #expect(try await within("the first link to end") { try await firstLink.receive() } == nil)
        var probes: [RawTCPClient] = []
        for _ in 0..<50 where events.inboundLinkCount < 2 {
            probes.append(try RawTCPClient(port: port))
            _ = try? await eventuallyValue("the probe to be admitted", seconds: 0.2) {
                events.inboundLinkCount == 2 ? true : nil
            }
        }
        #expect(events.inboundLinkCount == 2)
        await server.stop()
        for probe in probes { #expect(await probe.closedByServer(seconds: 30)) }
    }
}
