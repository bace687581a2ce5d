import MeshCore
import MeshTesting
import Testing
import TransportLoopback

/// Multi-hop delivery (docs/PROTOCOL.md §A.5–A.6) over in-process loopback links:
/// routes learned from signed announcements, relays that take custody of sealed
/// messages, receipts that travel back the same way, partitions that heal, and the
/// relay switch.
@Suite struct MultiHopTests {
    /// A–B–C–D–E, each dialling only its left neighbour: A learns E four hops away,
    /// its message crosses three relays, E's receipt comes back and makes it
    /// delivered; E gets it exactly once, and no relay delivers or opens it.
    @Test(.timeLimit(.minutes(3))) func fiveNodeLineDeliversThroughThreeRelays() async throws {
        let line = await RouterGraph.line(count: 5)
        defer { Task { await line.stop() } }
        try await line.waitForLinks()
        try await line.waitForRoute(from: 0, to: 4, hops: 4)
        try await line.waitForRoute(from: 4, to: 0, hops: 4)
        let routes = await line[0].routes()
        let toE = try #require(routes.first { $0.destination == line[4].localPeerID })
        #expect(toE.nextHop == line[1].localPeerID)
        #expect(toE.transport == "lo")
        #expect(routes.first { $0.destination == line[1].localPeerID }?.hops == 1)

        let payload = Array("hello across the mesh".utf8)
        let id = try await line[0].send(to: line[4].localPeerID, payload: payload)
        let record = try await line[0].waitForStatus(of: id, until: .delivered, timeout: .seconds(60))
        #expect(record.status == .delivered)
        #expect(record.flags & 0x0001 != 0)  // sealed at submit: no direct link to E

        let atE = line.received(at: 4)
        #expect(atE.count == 1)
        #expect(atE.first?.id == id)
        #expect(atE.first?.payload == payload)
        #expect(atE.first?.from == line[0].localPeerID)
        for relay in 1...3 {
            // The message one way, the receipt the other (a relay counts a message
            // once the next hop's acknowledgement reaches it, which may come after A
            // has the receipt).
            try await line.waitUntil("N\(relay) relayed the message and the receipt") {
                await line[relay].stats().messagesRelayed == 2
            }
            #expect(line.received(at: relay).isEmpty)
            #expect(await line[relay].stats().messagesReceived == 0)
            #expect(await line[relay].status(of: id)?.status == .relayed)
            // It met its two neighbours; it carried the message and the receipt.
            let relayStats = await line[relay].stats()
            #expect(relayStats.peersMet == 2)
            #expect(relayStats.bytesRelayed > 0)
        }
        let stats = await line[0].stats()
        #expect(stats.receiptsAccepted == 1)
        #expect(stats.announcesRejected["badSignature", default: 0] == 0)
        #expect(stats.announcesSent > 0 && stats.announcesAccepted > 0)
        // A second message reuses the routes; E still has each exactly once.
        let again = try await line[0].send(
            to: line[4].localPeerID,
            payload: [1, 2, 3],
            waitUntil: .delivered,
            timeout: .seconds(60)
        )
        #expect(line.received(at: 4).map(\.id) == [id, again])
    }

    /// Messages sent while the line is cut between B and C wait (at A or in B's
    /// custody) and are delivered, each once, after the cut heals; the receipts
    /// come back too.
    @Test(.timeLimit(.minutes(3))) func messagesSentDuringAPartitionArriveAfterTheHeal() async throws {
        let line = await RouterGraph.line(count: 5)
        defer { Task { await line.stop() } }
        try await line.waitForLinks()
        try await line.waitForRoute(from: 0, to: 4, hops: 4)
        let before = try await line[0].send(
            to: line[4].localPeerID,
            payload: [0],
            waitUntil: .delivered,
            timeout: .seconds(60)
        )

        line.network.partition(RouterGraph.address(1), RouterGraph.address(2))
        let c = line[2].localPeerID
        try await line.waitUntil("B's routes through C are gone") {
            await !line[1].routes().contains { $0.nextHop == c || $0.destination == line[4].localPeerID }
        }
        var during: [MessageID] = []
        for index in 1...5 {
            during.append(try await line[0].send(to: line[4].localPeerID, payload: [UInt8(index)]))
        }
        // Nothing crosses the cut: B holds what A handed it, none is delivered.
        try await line.waitUntil("B holds the messages in custody") {
            var held = 0
            for id in during where await line[1].status(of: id)?.status == .queued { held += 1 }
            return held == during.count
        }
        for id in during { #expect(await line[0].status(of: id)?.status != .delivered) }
        #expect(line.received(at: 4).map(\.id) == [before])

        line.network.heal(RouterGraph.address(1), RouterGraph.address(2))
        for id in during {
            #expect(
                try await line[0].waitForStatus(of: id, until: .delivered, timeout: .seconds(60)).status == .delivered
            )
        }
        let ids = line.received(at: 4).map(\.id)
        #expect(ids.count == 1 + during.count)
        #expect(Set(ids) == Set([before] + during))
    }

    /// With relaying off at C, C neither announces nor carries anything: A never
    /// learns a route to E and its message waits in A's outbox. Once C relays again it
    /// announces, the route reaches A, and the message is delivered, once.
    @Test(.timeLimit(.minutes(3))) func relayOffInTheMiddleHoldsMessagesUntilItIsBackOn() async throws {
        let line = await RouterGraph.line(count: 5, relayOff: [2])
        defer { Task { await line.stop() } }
        try await line.waitForLinks()
        let e = line[4].localPeerID
        let id = try await line[0].send(to: e, payload: Array("wait for C".utf8))
        // The far side learned its routes (D knows E, and C learned D and E while
        // switched off), but none crossed C: A and B know no route to E.
        try await line.waitForRoute(from: 3, to: 4)
        try await line.waitForRoute(from: 2, to: 4)
        try await line.waitForRoute(from: 0, to: 1)
        #expect(await !line[0].routes().contains { $0.destination == e })
        #expect(await !line[1].routes().contains { $0.destination == e })
        #expect(await line[0].status(of: id)?.status == .queued)
        #expect(line[2].relayEnabled == false)
        await #expect(throws: MeshError.self) { try await line[2].send(to: e, payload: [1]) }

        let events = await line[0].events()
        line[2].setRelayEnabled(true)
        #expect(try await line[0].waitForStatus(of: id, until: .delivered, timeout: .seconds(60)).status == .delivered)
        #expect(line.received(at: 4).map(\.id) == [id])
        // The route's arrival was reported before the message could go.
        var learned: RouterEvent?
        for await event in events where event.kind == .routeLearned && event.peer == e {
            learned = event
            break
        }
        #expect(learned?.reason?.contains("4 hops") == true)
        #expect(await line[2].stats().messagesRelayed >= 1)
    }

    /// A message queued unsealed (a direct link was up) whose direct link is gone
    /// before it could be delivered is sealed once, in the queue, and goes through the
    /// relay: never sent unsealed via a relay, never lost, delivered once.
    @Test(.timeLimit(.minutes(3))) func anUnsealedMessageIsSealedOnceToGoThroughARelay() async throws {
        // A–B–C in a line, plus a direct link C–A; C starts with relaying (and so
        // receiving) off, so A's direct send is refused and the message stays queued.
        let line = await RouterGraph.line(count: 3, relayOff: [2])
        defer { Task { await line.stop() } }
        await line[2].connect(to: PeerHint(transport: "lo", address: RouterGraph.address(0)))
        try await line.waitForLinks()
        let a = line[0].localPeerID
        let c = line[2].localPeerID
        // Both ends: A sends by the direct link only once its own table has it.
        try await line.waitUntil("A and C are linked directly") {
            let cSeesA = await line[2].peers().contains { $0.peer == a }
            let aSeesC = await line[0].peers().contains { $0.peer == c }
            return cSeesA && aSeesC
        }
        let payload = Array("first direct, then relayed".utf8)
        let id = try await line[0].send(to: c, payload: payload)
        #expect(await line[0].status(of: id)?.flags == 0)  // unsealed: the direct link was up
        try await line.waitUntil("C refused the direct copy") { await line[2].stats().framesRefused >= 1 }

        line.network.partition(RouterGraph.address(0), RouterGraph.address(2))
        try await line.waitUntil("A lost its direct link to C") { await !line[0].peers().contains { $0.peer == c } }
        line[2].setRelayEnabled(true)
        let record = try await line[0].waitForStatus(of: id, until: .delivered, timeout: .seconds(60))
        #expect(record.status == .delivered)
        #expect(record.flags & 0x0001 != 0)  // sealed once, in the queue
        #expect(line.received(at: 2).map(\.id) == [id])
        #expect(line.received(at: 2).first?.payload == payload)
        #expect(await line[1].status(of: id)?.status == .relayed)
        #expect(await line[1].stats().relayRefused["unsealed", default: 0] == 0)
    }

    /// Routes not confirmed by a newer announcement age out (on the injected clock):
    /// A's route to C through B goes after `route_max_age`, a direct link stays a
    /// 1-hop route, and a message for C then waits; C's next periodic announcement
    /// brings the route back and the message goes.
    @Test(.timeLimit(.minutes(3))) func routesAgeOutAndComeBackWithTheNextAnnouncement() async throws {
        let clock = ManualClock()
        let routing = RoutingConfiguration(
            announceInterval: .seconds(1000),
            announceJitter: 0,
            routeMaxAge: .seconds(100)
        )
        let line = await RouterGraph.line(count: 3, clock: clock, routing: routing, keepalive: .seconds(7200))
        defer { Task { await line.stop() } }
        try await line.waitForLinks()
        try await line.waitForRoute(from: 0, to: 2, hops: 2)
        let (b, c) = (line[1].localPeerID, line[2].localPeerID)

        clock.advance(by: .seconds(99))
        #expect(await line[0].routes().contains { $0.destination == c && $0.ageMilliseconds == 99_000 })
        clock.advance(by: .seconds(1))
        let routes = await line[0].routes()
        #expect(!routes.contains { $0.destination == c })
        #expect(routes.contains { $0.destination == b && $0.hops == 1 })  // the direct link stays
        let id = try await line[0].send(to: c, payload: [4, 2])
        #expect(await line[0].status(of: id)?.status == .queued)

        clock.advance(by: .seconds(900))  // the periodic announcements are due
        #expect(
            try await line[0].waitForStatus(of: id, until: .delivered, timeout: .seconds(3600)).status == .delivered
        )
        #expect(line.received(at: 2).map(\.id) == [id])
    }
}
