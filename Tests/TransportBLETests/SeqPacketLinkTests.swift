import MeshCore
import Testing

@testable import TransportBLE

#if canImport(Glibc)
import Glibc
#endif

@Suite("SeqPacketLink over socketpair(AF_UNIX, SOCK_SEQPACKET)")
struct SeqPacketLinkTests {
    @Test("frames arrive in order with their boundaries, both ways at once")
    func orderAndBoundaries() async throws {
        let (a, b) = try makeLinkPair(mtu: 512)
        let sizes = (0..<300).map { 1 + ($0 * 37) % 512 }
        async let aToB: Void = {
            for (index, size) in sizes.enumerated() { try await a.send(pattern(index, size: size)) }
        }()
        async let bToA: Void = {
            for (index, size) in sizes.enumerated().reversed() { try await b.send(pattern(index, size: size)) }
        }()
        for (index, size) in sizes.enumerated() {
            let frame = try await b.receive()
            #expect(frame == pattern(index, size: size))
        }
        for (index, size) in sizes.enumerated().reversed() {
            let frame = try await a.receive()
            #expect(frame == pattern(index, size: size))
        }
        try await aToB
        try await bToA
        await a.close()
        await b.close()
    }

    @Test("a frame over the MTU is refused; one of exactly the MTU goes through")
    func mtuEnforcedOnSend() async throws {
        let (a, b) = try makeLinkPair(mtu: 100)
        await #expect(throws: MeshError.self) { try await a.send(pattern(0, size: 101)) }
        do {
            try await a.send(pattern(0, size: 101))
        } catch let error as MeshError {
            #expect(error.code == .frameTooLarge)
        }
        try await a.send(pattern(1, size: 100))
        #expect(try await b.receive() == pattern(1, size: 100))
        await a.close()
        await b.close()
    }

    @Test("a packet over the receive MTU fails the receiving link")
    func oversizedInboundPacket() async throws {
        let (a, b) = try makeLinkPair(mtu: 200, receiveMTU: 50)
        try await a.send(pattern(0, size: 51))
        do {
            _ = try await b.receive()
            Issue.record("receive accepted a packet over its MTU")
        } catch let error as MeshError {
            #expect(error.code == .frameTooLarge)
        }
        #expect(try await b.receive() == nil)
        #expect(try await a.receive() == nil)
        await a.close()
    }

    @Test("empty frames are refused (they would read as end of stream)")
    func emptyFrameRefused() async throws {
        let (a, b) = try makeLinkPair()
        do {
            try await a.send([])
            Issue.record("empty frame accepted")
        } catch let error as MeshError {
            #expect(error.code == .invalidArgument)
        }
        await a.close()
        await b.close()
    }

    @Test("close: local receive and send end, the remote sees end of stream, close is idempotent")
    func closeSemantics() async throws {
        let (a, b) = try makeLinkPair()
        try await a.send([1, 2, 3])
        await a.close()
        await a.close()
        #expect(try await a.receive() == nil)
        do {
            try await a.send([4])
            Issue.record("send after close succeeded")
        } catch let error as MeshError {
            #expect(error.code == .linkClosed)
        }
        // The remote still gets what was sent before the close, then end of stream.
        #expect(try await b.receive() == [1, 2, 3])
        #expect(try await b.receive() == nil)
        #expect(try await b.receive() == nil)
        do {
            try await b.send([5])
            Issue.record("send on a link whose remote closed succeeded")
        } catch let error as MeshError {
            #expect(error.code == .linkClosed)
        }
        await b.close()
    }

    @Test("close wakes a pending receive with nil, on both ends")
    func closeWakesPendingReceive() async throws {
        let (a, b) = try makeLinkPair()
        let started = Counter()
        async let localReceive: [UInt8]? = {
            started.increment()
            return try await a.receive()
        }()
        async let remoteReceive: [UInt8]? = {
            started.increment()
            return try await b.receive()
        }()
        while started.value < 2 { await Task.yield() }
        await a.close()
        #expect(try await localReceive == nil)
        #expect(try await remoteReceive == nil)
        await b.close()
    }

    @Test("back-pressure: send suspends while the remote reads nothing, and nothing is lost")
    func backPressure() async throws {
        let (a, b) = try makeLinkPair(mtu: 1000, sendBuffer: 4096)
        let total = 2000  // 2 MB: far more than the socket buffers hold
        let sent = Counter()
        let sender = Task {
            for index in 0..<total {
                try await a.send(pattern(index, size: 1000))
                sent.increment()
            }
        }
        // Wait until the sender stops making progress: the buffers are full.
        var last = -1
        while sent.value != last {
            last = sent.value
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(last < total, "every send completed with nobody reading: no back-pressure")
        for index in 0..<total {
            let frame = try await b.receive()
            #expect(frame == pattern(index, size: 1000))
            if frame != pattern(index, size: 1000) { break }
        }
        try await sender.value
        #expect(sent.value == total)
        await a.close()
        await b.close()
    }

    /// Also in a cancelled task: a transport closes its links after its `listen` was cancelled.
    @Test("close waits for the kernel's unsent bytes to drain, refusing new sends meanwhile", arguments: [false, true])
    func closeDrainsFirst(inCancelledTask: Bool) async throws {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
        let polls = Counter()
        // Reports 3, 2, 1, then 0 bytes unsent, one step per poll.
        let a = try SeqPacketLink(
            adopting: fds[0],
            transportName: "ble",
            remoteAddress: "b",
            mtu: 64,
            receiveMTU: 64,
            unsentBytes: { _ in
                polls.increment()
                return max(0, 4 - polls.value)
            }
        )
        let b = try SeqPacketLink(adopting: fds[1], transportName: "ble", remoteAddress: "a", mtu: 64, receiveMTU: 64)
        try await a.send([1])
        let closing = Task {
            if inCancelledTask { withUnsafeCurrentTask { $0?.cancel() } }
            await a.close()
        }
        await closing.value
        #expect(polls.value == 4)
        #expect(try await b.receive() == [1])
        #expect(try await b.receive() == nil)
        await #expect(throws: MeshError.self) { try await a.send([2]) }
        await b.close()
    }

    @Test("a cancelled receive throws CancellationError and the link stays usable")
    func cancelledReceive() async throws {
        let (a, b) = try makeLinkPair()
        let waiting = Task { try await a.receive() }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        try await b.send([9])
        #expect(try await a.receive() == [9])
        await a.close()
        await b.close()
    }
}
