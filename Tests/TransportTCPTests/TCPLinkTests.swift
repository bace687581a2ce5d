import MeshCore
import MeshTesting
import Synchronization
import TestSupport
import Testing
import TransportTCP

/// Frames, MTU, back-pressure and close semantics of TCP links on real loopback sockets.
@Suite(.timeLimit(.minutes(3)))
struct TCPLinkTests {
    /// A frame whose bytes tell its sequence number and size, so order and content are checked.
    static func frame(_ index: Int, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) }
    }

    @Test func framesFlowBothWaysInOrder() async throws {
        let pair = try await LinkedPair.make()
        let count = 300
        let sizes = (0..<count).map { ($0 * 97) % 4000 }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (sender, receiver) in [(pair.dialed, pair.accepted), (pair.accepted, pair.dialed)] {
                group.addTask {
                    for index in 0..<count { try await sender.send(Self.frame(index, size: sizes[index])) }
                }
                group.addTask {
                    for index in 0..<count {
                        let received = try await receiver.receive()
                        #expect(received == Self.frame(index, size: sizes[index]), "frame \(index)")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(pair.dialed.remoteAddress == pair.server.running.addresses.first)
        await pair.stop()
    }

    @Test(arguments: [16, 1000, 65535])
    func framesOfExactlyMTU(maxFrameSize: Int) async throws {
        let pair = try await LinkedPair.make(
            server: .init(listen: ["127.0.0.1:0"], maxFrameSize: maxFrameSize),
            client: .init(listen: [], maxFrameSize: maxFrameSize)
        )
        #expect(pair.dialed.mtu == maxFrameSize)
        #expect(pair.accepted.mtu == maxFrameSize)
        #expect(pair.server.transport.capabilities.maxFrameSize == maxFrameSize)
        for index in 0..<5 {
            try await pair.dialed.send(Self.frame(index, size: maxFrameSize))
            try await pair.accepted.send(Self.frame(index + 100, size: maxFrameSize))
        }
        for index in 0..<5 {
            #expect(try await pair.accepted.receive() == Self.frame(index, size: maxFrameSize))
            #expect(try await pair.dialed.receive() == Self.frame(index + 100, size: maxFrameSize))
        }
        await pair.stop()
    }

    @Test func emptyFramesKeepTheirBoundaries() async throws {
        let pair = try await LinkedPair.make()
        try await pair.dialed.send([])
        try await pair.dialed.send([7])
        try await pair.dialed.send([])
        #expect(try await pair.accepted.receive() == [])
        #expect(try await pair.accepted.receive() == [7])
        #expect(try await pair.accepted.receive() == [])
        await pair.stop()
    }

    @Test func sendOverMTUThrowsAndTheLinkStaysUsable() async throws {
        let pair = try await LinkedPair.make(
            server: .init(listen: ["127.0.0.1:0"], maxFrameSize: 512),
            client: .init(listen: [], maxFrameSize: 512)
        )
        await expectMeshError(.frameTooLarge) { try await pair.dialed.send(Self.frame(0, size: 513)) }
        await expectMeshError(.frameTooLarge) { try await pair.accepted.send(Self.frame(0, size: 70_000)) }
        try await pair.dialed.send(Self.frame(1, size: 512))
        #expect(try await pair.accepted.receive() == Self.frame(1, size: 512))
        await pair.stop()
    }

    /// A receiver that does not read makes the sender suspend after a bounded amount
    /// of data; reading then releases every frame, in order.
    @Test func slowReaderSlowsTheWriter() async throws {
        let pair = try await LinkedPair.make()
        let frameSize = 65535
        let total = 1024  // 64 MiB: far more than the socket buffers and NIO's bounded queues
        let sent = Atomic<Int>(0)
        let sender = pair.dialed
        let writer = Task {
            var frame = [UInt8](repeating: 0xAB, count: frameSize)
            for index in 0..<total {
                frame[0] = UInt8(truncatingIfNeeded: index >> 8)
                frame[1] = UInt8(truncatingIfNeeded: index)
                try await sender.send(frame)
                sent.store(index + 1, ordering: .relaxed)
            }
        }
        // Wait until the writer makes no progress for a while: it is suspended.
        var last = -1
        var stableRounds = 0
        for _ in 0..<200 where stableRounds < 3 {
            try await Task.sleep(for: .milliseconds(100))
            let now = sent.load(ordering: .relaxed)
            stableRounds = now == last ? stableRounds + 1 : 0
            last = now
        }
        let stalledAt = sent.load(ordering: .relaxed)
        #expect(stableRounds >= 3, "the writer never stalled")
        #expect(stalledAt < total, "the writer pushed all \(total) frames into an unbounded queue")
        #expect(stalledAt * frameSize < 48 << 20, "more than 48 MiB buffered before the writer stalled")

        for index in 0..<total {
            let frame = try #require(try await pair.accepted.receive())
            #expect(frame.count == frameSize)
            #expect(Int(frame[0]) << 8 | Int(frame[1]) == index % 65536, "frame \(index) out of order")
        }
        try await writer.value
        #expect(sent.load(ordering: .relaxed) == total)
        await pair.stop()
    }

    /// A send held back by back-pressure fails with `.linkClosed` when either end closes.
    @Test(arguments: [true, false])
    func closeReleasesASuspendedSend(localClose: Bool) async throws {
        let pair = try await LinkedPair.make()
        let sender = pair.dialed
        let sent = Atomic<Int>(0)
        let outcome = Task { () -> MeshError? in
            let frame = [UInt8](repeating: 1, count: 65535)
            do {
                for _ in 0..<2048 {  // 128 MiB: must block
                    try await sender.send(frame)
                    sent.add(1, ordering: .relaxed)
                }
            } catch let error as MeshError {
                return error
            }
            return nil
        }
        var last = -1
        while sent.load(ordering: .relaxed) != last {
            last = sent.load(ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(200))
        }
        if localClose { await sender.close() } else { await pair.accepted.close() }
        let error = try await within("the suspended send to fail") { try await outcome.value }
        #expect(error?.code == .linkClosed)
        await pair.stop()
    }

    @Test(arguments: [true, false])
    func closeFromEitherEnd(dialerCloses: Bool) async throws {
        let pair = try await LinkedPair.make()
        let (closer, remote) = dialerCloses ? (pair.dialed, pair.accepted) : (pair.accepted, pair.dialed)
        try await closer.send([1, 2, 3])
        await closer.close()
        await closer.close()  // idempotent
        #expect(try await closer.receive() == nil)
        await expectMeshError(.linkClosed) { try await closer.send([4]) }

        // The remote still gets what was sent before the close, then the end.
        #expect(try await remote.receive() == [1, 2, 3])
        let end = try await within("end of stream at the remote") { try await remote.receive() }
        #expect(end == nil)
        await expectMeshError(.linkClosed) { try await remote.send([5]) }
        #expect(try await remote.receive() == nil)
        await remote.close()
        await pair.stop()
    }

    @Test func closeWakesAPendingReceive() async throws {
        let pair = try await LinkedPair.make()
        let link = pair.accepted
        let reader = Task { try await link.receive() }
        try await Task.sleep(for: .milliseconds(50))
        await link.close()
        let result = try await within("the pending receive to return") { try await reader.value }
        #expect(result == nil)
        await pair.stop()
    }

    @Test func cancellingAReceiveLosesNoFrame() async throws {
        let pair = try await LinkedPair.make()
        let link = pair.accepted
        let reader = Task { try await link.receive() }
        try await Task.sleep(for: .milliseconds(50))
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        try await pair.dialed.send([9, 9])
        #expect(try await link.receive() == [9, 9])
        await pair.stop()
    }

    /// Cancelling the listening side's `listen` closes its inbound links; cancelling
    /// the dialling side's closes its outbound ones.
    @Test(arguments: [true, false])
    func cancellingListenClosesLinks(serverSide: Bool) async throws {
        let pair = try await LinkedPair.make()
        let (stopped, other) = serverSide ? (pair.server, pair.client) : (pair.client, pair.server)
        let (local, remote) = serverSide ? (pair.accepted, pair.dialed) : (pair.dialed, pair.accepted)
        await stopped.stop()
        #expect(try await local.receive() == nil)
        await expectMeshError(.linkClosed) { try await local.send([1]) }
        let end = try await within("the other end to see the end") { try await remote.receive() }
        #expect(end == nil)
        _ = try await eventuallyValue("events to finish") { stopped.events.isFinished ? true : nil }
        #expect(stopped.transport.boundAddresses.isEmpty)
        await stopped.stop()  // idempotent
        await other.stop()
    }
}
