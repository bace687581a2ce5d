import MeshCore
import Synchronization
import Testing

@testable import TransportBLE

@Suite("GATT link moving to an L2CAP channel (in-memory bearer and channel)")
struct GATTLinkMoveTests {
    /// A set-up central and peripheral link on an in-memory ATT bearer (ATT MTU 247),
    /// and an in-memory channel pair (MTU 672) for the move.
    func withLinks(
        channelWait: Duration = .seconds(10),
        _ body: (GATTLink, GATTLink, MemoryPacketLink, MemoryPacketLink) async throws -> Void
    ) async throws {
        let (a, b) = MemoryPacketLink.pair()
        let central = GATTConnection(bearer: a, identity: [])
        let peripheral = GATTConnection(bearer: b, identity: GATTTests.identity)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await central.run() }
            group.addTask { await peripheral.run() }
            let profile = try await central.setUpClient(requestedMTU: 247)
            #expect(await peripheral.waitForSubscription())
            let outbound = GATTLink(connection: central, role: .central(txHandle: profile.txHandle), remoteAddress: "p")
            let inbound = GATTLink(
                connection: peripheral,
                role: .peripheral,
                remoteAddress: "c",
                channelWait: channelWait
            )
            let (channelA, channelB) = MemoryPacketLink.pair(mtu: 672)
            try await body(outbound, inbound, channelA, channelB)
            await outbound.close()
            await inbound.close()
            try await group.waitForAll()
        }
    }

    func frame(_ index: Int, _ tag: UInt8) -> [UInt8] {
        [UInt8(index >> 8), UInt8(index & 0xFF), tag] + Array(repeating: tag, count: index % 200)
    }

    /// Sends `count` frames each way while the central moves after frame `moveAt`;
    /// checks every frame arrives once, in order.
    func moveUnderTraffic(offerFirst: Bool) async throws {
        try await withLinks { outbound, inbound, channelA, channelB in
            #expect(outbound.mtu == 244)
            if offerFirst { #expect(inbound.offerChannel(channelB)) }
            let count = 300
            let moveAt = 120
            async let sentOut: Void = {
                for index in 0..<count {
                    try await outbound.send(frame(index, 0xA))
                    if index == moveAt {
                        // The transport moves from its own task while the core sends.
                        Task {
                            try await outbound.moveSending(to: channelA)
                            // The marker was answered: the peripheral has it queued and
                            // its reader waits for the channel (or soon will).
                            if !offerFirst { #expect(inbound.offerChannel(channelB)) }
                        }
                    }
                }
            }()
            async let sentIn: Void = { for index in 0..<count { try await inbound.send(frame(index, 0xB)) } }()
            async let receivedIn: [[UInt8]] = {
                var frames: [[UInt8]] = []
                for _ in 0..<count {
                    guard let next = try await inbound.receive() else { break }
                    frames.append(next)
                }
                return frames
            }()
            var receivedOut: [[UInt8]] = []
            for _ in 0..<count {
                guard let next = try await outbound.receive() else { break }
                receivedOut.append(next)
            }
            try await sentOut
            try await sentIn
            let inboundFrames = try await receivedIn
            #expect(inboundFrames == (0..<count).map { frame($0, 0xA) })
            #expect(receivedOut == (0..<count).map { frame($0, 0xB) })
            // The peripheral moved its sending when the central's marker came (its
            // reader met it before the frames after it); the central's later frames went
            // on its channel.
            #expect(inbound.isMoved)
            #expect(channelA.sent.withLock { $0.count } > 0)
            try await outbound.send([7, 7])
            #expect(channelA.sent.withLock { $0.last } == [7, 7])
            #expect(try await inbound.receive() == [7, 7])
            try await inbound.send([8])
            #expect(channelB.sent.withLock { $0.last } == [8])
            // The central met the peripheral's marker on its way to [8].
            #expect(try await outbound.receive() == [8])
            #expect(outbound.isMoved)
            // No empty packet ever reached the channels (the markers went over GATT).
            #expect(
                !channelA.sent.withLock { $0.contains { $0.isEmpty } }
                    && !channelB.sent.withLock { $0.contains { $0.isEmpty } }
            )
        }
    }

    @Test("a link moves under traffic both ways, the channel accepted before the marker: every frame once, in order")
    func moveChannelFirst() async throws {
        try await moveUnderTraffic(offerFirst: true)
    }

    @Test("a link moves under traffic both ways, the marker before the channel: every frame once, in order")
    func moveMarkerFirst() async throws {
        try await moveUnderTraffic(offerFirst: false)
    }

    @Test("an offered channel no marker claimed can be withdrawn; a claimed one cannot; a small channel is refused")
    func offerAndWithdraw() async throws {
        try await withLinks { outbound, inbound, channelA, channelB in
            #expect(inbound.takesChannel)
            #expect(inbound.offerChannel(channelB))
            #expect(!inbound.takesChannel && !inbound.offerChannel(channelA))
            #expect((inbound.withdrawUnclaimedChannel() as? MemoryPacketLink) === channelB)
            #expect(inbound.withdrawUnclaimedChannel() == nil)

            let (small, _) = MemoryPacketLink.pair(mtu: 100)
            await #expect(throws: MeshError.self) { try await outbound.moveSending(to: small) }
            #expect(outbound.takesChannel)

            #expect(inbound.offerChannel(channelB))
            try await outbound.moveSending(to: channelA)
            try await outbound.send([1])
            #expect(try await inbound.receive() == [1])
            #expect(inbound.withdrawUnclaimedChannel() == nil)
            // Closing the link closes its channel: the remote's channel end ends.
            await outbound.close()
            #expect(try await inbound.receive() == nil)
        }
    }

    @Test("a marker with no channel to follow closes the link: the remote's later frames would be out of reach")
    func markerWithoutChannel() async throws {
        try await withLinks(channelWait: .zero) { outbound, inbound, channelA, _ in
            try await outbound.send([1])
            try await outbound.moveSending(to: channelA)
            #expect(try await inbound.receive() == [1])
            #expect(try await inbound.receive() == nil)
            #expect(!inbound.takesChannel)
            // The bearer ended with the peripheral's link: the central's link ends too.
            #expect(try await outbound.receive() == nil)
        }
    }
}
