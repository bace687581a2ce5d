import MeshCore
import Synchronization
import Testing

@testable import TransportBLE

@Suite("GATT write window (in-memory bearer)")
struct GATTWriteWindowTests {
    static let writeRequest: UInt8 = 0x12
    static let writeCommand: UInt8 = 0x52

    /// A central link with `window` and its peripheral on an in-memory ATT bearer: sends
    /// `count` frames, then (with `move`) moves to a channel; returns the opcodes of the
    /// central's TX writes and what the peripheral received, in order.
    func run(window: Int, count: Int, move: Bool = false) async throws -> (opcodes: [UInt8], received: [[UInt8]]) {
        let (a, b) = MemoryPacketLink.pair()
        let central = GATTConnection(bearer: a, identity: [])
        let peripheral = GATTConnection(bearer: b, identity: GATTTests.identity)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await central.run() }
            group.addTask { await peripheral.run() }
            let profile = try await central.setUpClient(requestedMTU: 247)
            #expect(await peripheral.waitForSubscription())
            let setUp = a.sent.withLock { $0.count }
            let outbound = GATTLink(
                connection: central,
                role: .central(txHandle: profile.txHandle),
                remoteAddress: "p",
                writeWindow: window
            )
            let inbound = GATTLink(connection: peripheral, role: .peripheral, remoteAddress: "c")
            for index in 0..<count { try await outbound.send([UInt8(index), 0xEE]) }
            var received: [[UInt8]] = []
            for _ in 0..<count { received.append(try await inbound.receive() ?? []) }
            if move {
                let (channelA, channelB) = MemoryPacketLink.pair(mtu: 672)
                #expect(inbound.offerChannel(channelB))
                try await outbound.moveSending(to: channelA)
                try await outbound.send([0xAB])
                #expect(try await inbound.receive() == [0xAB])
            }
            let opcodes = a.sent.withLock { $0.dropFirst(setUp).map { $0.first ?? 0 } }
            await outbound.close()
            await inbound.close()
            try await group.waitForAll()
            return (opcodes, received)
        }
    }

    func frames(_ count: Int) -> [[UInt8]] { (0..<count).map { [UInt8($0), 0xEE] } }

    @Test("window 1: every packet is a Write Request")
    func requestsOnly() async throws {
        let (opcodes, received) = try await run(window: 1, count: 10)
        #expect(opcodes == Array(repeating: Self.writeRequest, count: 10))
        #expect(received == frames(10))
    }

    @Test("window 4: three Write Commands, then a Write Request, in turn; every frame once, in order")
    func commandsThenRequest() async throws {
        let (opcodes, received) = try await run(window: 4, count: 10)
        let c = Self.writeCommand
        let r = Self.writeRequest
        #expect(opcodes == [c, c, c, r, c, c, c, r, c, c])
        #expect(received == frames(10))
    }

    @Test("the move marker is a Write Request and starts a new run")
    func markerIsARequest() async throws {
        let (opcodes, received) = try await run(window: 3, count: 4, move: true)
        let c = Self.writeCommand
        let r = Self.writeRequest
        // Four frames (c c r c), then the empty marker as a request; the frame after the
        // move goes on the channel, not over ATT.
        #expect(opcodes == [c, c, r, c, r])
        #expect(received == frames(4))
    }

    @Test("gatt_write_window decodes, defaults to 1 and is bounded to 1–64 naming the key")
    func configuration() throws {
        #expect(BLETransport.Configuration().gattWriteWindow == 1)
        for bad in [0, 65] {
            var configuration = BLETransport.Configuration()
            configuration.gattWriteWindow = bad
            do {
                try configuration.validate()
                Issue.record("gatt_write_window \(bad) accepted")
            } catch {
                #expect(error.message.hasPrefix("transports.ble.gatt_write_window:"), "\(error.message)")
            }
        }
    }
}
