import MeshCore
import Synchronization
import Testing

@testable import TransportBLE

@Suite("GATT server, client and link (in-memory ATT bearer)")
struct GATTTests {
    static let identity = GATTIdentity(
        beacon: BLEBeacon(psm: 0x81, ephemeralID: [8, 7, 6, 5, 4, 3, 2, 1]),
        listeningPSM: 0x81
    ).encoded()

    /// Sends `request` to a fresh server (MTU 23) and decodes the answer.
    func ask(_ server: inout GATTServer, _ request: ATTPDU) throws -> ATTPDU? {
        let (response, _) = server.handle(request.encoded())
        return try response.map { try ATTPDU(decoding: $0) }
    }

    @Test("the server answers discovery, reads and writes as the profile documents")
    func serverDatabase() throws {
        var server = GATTServer(identity: Self.identity)
        #expect(
            try ask(&server, .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService))
                == .readByGroupTypeResponse([.init(handle: 1, groupEnd: 8, value: GATTProfile.service.bytes)])
        )
        #expect(
            try ask(&server, .readByGroupTypeRequest(start: 9, end: 0xFFFF, type: .primaryService))
                == .errorResponse(request: 0x10, handle: 9, error: .attributeNotFound)
        )
        #expect(
            try ask(&server, .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .characteristic))
                == .errorResponse(request: 0x10, handle: 1, error: .unsupportedGroupType)
        )
        #expect(
            try ask(
                &server,
                .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: GATTProfile.service.bytes)
            )
                == .findByTypeValueResponse([.init(handle: 1, groupEnd: 8)])
        )
        // 128-bit declarations: one per response at MTU 23 (2 + 2 + 19 bytes).
        #expect(
            try ask(&server, .readByTypeRequest(start: 1, end: 8, type: .characteristic))
                == .readByTypeResponse([.init(handle: 2, value: [0x0C, 3, 0] + GATTProfile.tx.bytes)])
        )
        #expect(
            try ask(&server, .readByTypeRequest(start: 3, end: 8, type: .characteristic))
                == .readByTypeResponse([.init(handle: 4, value: [0x10, 5, 0] + GATTProfile.rx.bytes)])
        )
        #expect(
            try ask(&server, .readByTypeRequest(start: 1, end: 8, type: GATTProfile.identity))
                == .readByTypeResponse([.init(handle: 8, value: Self.identity)])
        )
        #expect(
            try ask(&server, .findInformationRequest(start: 6, end: 6))
                == .findInformationResponse([.init(handle: 6, uuid: ATTUUID(0x2902))])
        )
        #expect(try ask(&server, .readRequest(handle: 8)) == .readResponse(value: Self.identity))
        #expect(
            try ask(&server, .readRequest(handle: 3))
                == .errorResponse(request: 0x0A, handle: 3, error: .readNotPermitted)
        )
        #expect(
            try ask(&server, .readRequest(handle: 0x40))
                == .errorResponse(request: 0x0A, handle: 0x40, error: .invalidHandle)
        )
        #expect(
            try ask(&server, .writeRequest(handle: 8, value: [1]))
                == .errorResponse(request: 0x12, handle: 8, error: .writeNotPermitted)
        )
        #expect(
            try ask(&server, .writeRequest(handle: 6, value: [1]))
                == .errorResponse(request: 0x12, handle: 6, error: .invalidAttributeValueLength)
        )
        #expect(
            try ask(&server, .findInformationRequest(start: 5, end: 2))
                == .errorResponse(request: 0x04, handle: 5, error: .invalidHandle)
        )
        #expect(
            try ask(&server, .unknown(opcode: 0x0C, parameters: [8, 0, 0, 0]))
                == .errorResponse(request: 0x0C, handle: 0, error: .requestNotSupported)
        )
        #expect(try ask(&server, .unknown(opcode: 0xD2, parameters: [1])) == nil)  // a signed write command: ignored
        let (truncated, _) = server.handle([0x0A, 0x08])
        #expect(
            truncated.map { try? ATTPDU(decoding: $0) } == .errorResponse(request: 0x0A, handle: 0, error: .invalidPDU)
        )
    }

    @Test("RX notifies only after the CCCD is written; TX writes are frames; the MTU exchange bounds them")
    func serverEvents() throws {
        var server = GATTServer(identity: Self.identity)
        #expect(server.notification([1]) == nil)
        #expect(try ask(&server, .exchangeMTURequest(clientMTU: 1000)) == .exchangeMTUResponse(serverMTU: 517))
        #expect(server.mtu == 517)
        let (subscribe, events) = server.handle(ATTPDU.writeRequest(handle: 6, value: [1, 0]).encoded())
        #expect(subscribe == [0x13])
        #expect(events == [.subscribed(true)])
        #expect(try ask(&server, .readRequest(handle: 6)) == .readResponse(value: [1, 0]))
        #expect(server.notification(Array(repeating: 7, count: 514)) == [0x1B, 5, 0] + Array(repeating: 7, count: 514))
        #expect(server.notification(Array(repeating: 7, count: 515)) == nil)
        let (written, frames) = server.handle(ATTPDU.writeCommand(handle: 3, value: [4, 5]).encoded())
        #expect(written == nil)
        #expect(frames == [.received([4, 5])])
        let (_, off) = server.handle(ATTPDU.writeRequest(handle: 6, value: [0, 0]).encoded())
        #expect(off == [.subscribed(false)])
        #expect(server.notification([1]) == nil)
    }

    /// A client and a server connection on an in-memory bearer, both running.
    func connectedPair(_ body: (GATTConnection, GATTConnection) async throws -> Void) async throws {
        let (a, b) = MemoryPacketLink.pair()
        let central = GATTConnection(bearer: a, identity: [])
        let peripheral = GATTConnection(bearer: b, identity: Self.identity)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await central.run() }
            group.addTask { await peripheral.run() }
            try await body(central, peripheral)
            await central.close()
            await peripheral.close()
            try await group.waitForAll()
        }
    }

    @Test("the client discovers the service, reads the identity, subscribes; frames cross both ways up to ATT MTU − 3")
    func clientAndLink() async throws {
        try await connectedPair { central, peripheral in
            let profile = try await central.setUpClient(requestedMTU: 247)
            #expect(profile.mtu == 247)
            #expect(profile.txHandle == GATTServer.txHandle && profile.rxHandle == GATTServer.rxHandle)
            #expect(
                profile.rxCCCDHandle == GATTServer.rxCCCDHandle && profile.identityHandle == GATTServer.identityHandle
            )
            #expect(
                try GATTIdentity(decoding: await central.read(handle: GATTServer.identityHandle)).listeningPSM == 0x81
            )
            #expect(await peripheral.waitForSubscription())
            #expect(peripheral.mtu == 247)

            let outbound = GATTLink(connection: central, role: .central(txHandle: profile.txHandle), remoteAddress: "p")
            let inbound = GATTLink(connection: peripheral, role: .peripheral, remoteAddress: "c")
            #expect(outbound.mtu == 244 && inbound.mtu == 244)
            let big = (0..<244).map { UInt8(truncatingIfNeeded: $0) }
            for frame in [[1, 2, 3], big] {
                try await outbound.send(frame)
                #expect(try await inbound.receive() == frame)
                try await inbound.send(frame.reversed())
                #expect(try await outbound.receive() == frame.reversed())
            }
            await #expect(throws: MeshError.self) { try await outbound.send(big + [0]) }
            await #expect(throws: MeshError.self) { try await inbound.send([]) }
            // 100 frames each way, concurrently: all arrive, in order.
            let count = 100
            async let sentOut: Void = { for index in 0..<count { try await outbound.send([UInt8(index), 0xA]) } }()
            async let sentIn: Void = { for index in 0..<count { try await inbound.send([UInt8(index), 0xB]) } }()
            for index in 0..<count {
                #expect(try await inbound.receive() == [UInt8(index), 0xA])
                #expect(try await outbound.receive() == [UInt8(index), 0xB])
            }
            try await sentOut
            try await sentIn
            await outbound.close()
            #expect(try await inbound.receive() == nil)
            await #expect(throws: MeshError.self) { try await outbound.send([1]) }
        }
    }

    /// Both ends of one bearer set up as clients: a link each way (a's central with b's
    /// peripheral end, b's central with a's).
    func linksBothWays(
        _ a: GATTConnection,
        _ b: GATTConnection
    ) async throws -> (GATTLink, GATTLink, GATTLink, GATTLink) {
        let fromA = try await a.setUpClient()
        let fromB = try await b.setUpClient()
        return (
            GATTLink(connection: a, role: .central(txHandle: fromA.txHandle), remoteAddress: "b"),
            GATTLink(connection: b, role: .peripheral, remoteAddress: "a"),
            GATTLink(connection: b, role: .central(txHandle: fromB.txHandle), remoteAddress: "a"),
            GATTLink(connection: a, role: .peripheral, remoteAddress: "b")
        )
    }

    @Test("both ends can be central and peripheral on one bearer; the two links' frames stay apart")
    func bothRolesOnOneBearer() async throws {
        try await connectedPair { a, b in
            let (aCentral, bPeripheral, bCentral, aPeripheral) = try await linksBothWays(a, b)
            try await aCentral.send([1])
            try await bCentral.send([2])
            try await aPeripheral.send([3])
            try await bPeripheral.send([4])
            #expect(try await bPeripheral.receive() == [1])
            #expect(try await aPeripheral.receive() == [2])
            #expect(try await bCentral.receive() == [3])
            #expect(try await aCentral.receive() == [4])
        }
    }

    /// Both devices dialled, so one bearer carries a link each way, and the core closes
    /// one of the two as a duplicate: closing it must not close the bearer, which
    /// carries the link the core kept.
    @Test(
        "closing one of two links on a bearer leaves the other running; a central's close ends the remote's end; the bearer goes with the last link"
    )
    func closingOneOfTwoLinksOnABearer() async throws {
        try await connectedPair { a, b in
            let (aCentral, bPeripheral, bCentral, aPeripheral) = try await linksBothWays(a, b)
            #expect(a.hasLink(.central) && a.hasLink(.peripheral))
            // a's link is the duplicate: a closes its end; b's end of it ends too (a
            // switched b's RX notifications off), and b closes it.
            await aCentral.close()
            #expect(!a.hasLink(.central) && a.hasLink(.peripheral))
            #expect(try await bPeripheral.receive() == nil)
            #expect(!b.remoteSubscribed)
            await bPeripheral.close()
            await #expect(throws: MeshError.self) { try await aCentral.send([1]) }
            await #expect(throws: MeshError.self) { try await bPeripheral.send([1]) }
            // The link kept carries frames both ways, on the same bearer.
            for index in 0..<50 {
                try await bCentral.send([UInt8(index)])
                #expect(try await aPeripheral.receive() == [UInt8(index)])
                try await aPeripheral.send([UInt8(index), 1])
                #expect(try await bCentral.receive() == [UInt8(index), 1])
            }
            // The last link on a's side closes the bearer: b's link ends.
            await aPeripheral.close()
            #expect(try await bCentral.receive() == nil)
        }
    }

    @Test("a server without the service is named in the dial error")
    func missingService() async throws {
        let (a, b) = MemoryPacketLink.pair()
        let central = GATTConnection(bearer: a, identity: [])
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await central.run() }
            group.addTask {
                // A server that knows no attribute at all.
                while let pdu = try await b.receive() {
                    let answer: ATTPDU =
                        pdu[0] == 0x02
                        ? .exchangeMTUResponse(serverMTU: 23)
                        : .errorResponse(request: pdu[0], handle: 1, error: .attributeNotFound)
                    try await b.send(answer.encoded())
                }
            }
            do {
                _ = try await central.setUpClient()
                Issue.record("set-up succeeded without the service")
            } catch let error as MeshError {
                #expect(error.code == .dialFailed)
                #expect(
                    error.message.contains("no SCMesh service (6E400001-B5A3-F393-E0A9-E50E24DCCA9E)"),
                    "\(error.message)"
                )
            }
            await central.close()
            await b.close()
            try await group.waitForAll()
        }
    }

    @Test("the central keeps one write in flight: the next Write Request waits for the Write Response")
    func oneWriteInFlight() async throws {
        let (a, b) = MemoryPacketLink.pair()
        let central = GATTConnection(bearer: a, identity: [])
        let link = GATTLink(connection: central, role: .central(txHandle: 3), remoteAddress: "raw")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await central.run() }
            for index in 0..<3 {
                group.addTask { try await link.send([UInt8(index)]) }
            }
            var seen: [UInt8] = []
            for _ in 0..<3 {
                let pdu = try #require(try await b.receive())
                let decoded = try ATTPDU(decoding: pdu)
                guard case .writeRequest(3, let value) = decoded else {
                    Issue.record("expected a write request, got \(decoded)")
                    break
                }
                seen += value
                // Give the other senders every chance to overlap a write: none may arrive.
                for _ in 0..<200 { await Task.yield() }
                #expect(a.sent.withLock { $0.count } == seen.count, "a second write went out before the response")
                try await b.send(ATTPDU.writeResponse.encoded())
            }
            #expect(seen.sorted() == [0, 1, 2])
            // A refused write fails the send and closes the link.
            let failing = Task { try await link.send([9]) }
            _ = try await b.receive()
            try await b.send(ATTPDU.errorResponse(request: 0x12, handle: 3, error: .writeNotPermitted).encoded())
            await #expect(throws: MeshError.self) { try await failing.value }
            await b.close()
            try await group.waitForAll()
        }
    }
}
