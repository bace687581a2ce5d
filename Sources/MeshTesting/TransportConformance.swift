import Logging
import MeshCore
import Synchronization
import TransportLoopback

/// The suite every transport passes: ordering, frames at and above the MTU,
/// back-pressure, close semantics from both ends, dialling a dead address,
/// reconnecting after the remote restarts, and malformed input from the remote.
///
/// Call it in one line from a transport's tests:
/// ```swift
/// @Test func conformance() async throws {
///     try await TransportConformance.run(.loopback())
/// }
/// ```
/// It throws ``ConformanceFailure`` listing every check that failed. Each check has a
/// hang guard (`Harness.checkTimeout`): a check that never finishes fails instead
/// of hanging the test run.
public enum TransportConformance {
    /// How the suite makes and reaches the transport under test.
    public struct Harness: Sendable {
        /// Makes side A (index 0) or side B (index 1). Called again for index 1 after B
        /// was stopped: the new transport must listen where the old one did.
        public var makeTransport: @Sendable (_ index: Int) async throws -> any Transport
        /// Where a started transport can be dialled.
        public var hint: @Sendable (_ transport: any Transport, _ index: Int) async throws -> PeerHint
        /// An address on this transport where nothing listens.
        public var deadHint: PeerHint
        /// Sends bytes that break the transport's own framing to the transport at the
        /// hint (a raw socket writing garbage, an oversized length prefix...). Nil when
        /// the medium has no way to do that.
        public var injectMalformed: (@Sendable (_ hint: PeerHint) async throws -> Void)?
        /// The hang guard per check.
        public var checkTimeout: Duration
        /// Bytes a sender may get accepted while the receiver reads nothing before the
        /// back-pressure check fails.
        public var backPressureLimitBytes: Int

        /// Creates a harness.
        public init(
            makeTransport: @escaping @Sendable (_ index: Int) async throws -> any Transport,
            hint: @escaping @Sendable (_ transport: any Transport, _ index: Int) async throws -> PeerHint,
            deadHint: PeerHint,
            injectMalformed: (@Sendable (_ hint: PeerHint) async throws -> Void)? = nil,
            checkTimeout: Duration = .seconds(30),
            backPressureLimitBytes: Int = 64 << 20
        ) {
            self.makeTransport = makeTransport
            self.hint = hint
            self.deadHint = deadHint
            self.injectMalformed = injectMalformed
            self.checkTimeout = checkTimeout
            self.backPressureLimitBytes = backPressureLimitBytes
        }
    }

    /// The checks, by name.
    public static let checkNames = [
        "ordering", "frames at and above the MTU", "back-pressure", "close from the dialler",
        "close from the acceptor", "dial to a dead address", "reconnect after the remote restarts",
        "malformed input from the remote",
    ]

    /// Runs every check (or those named in `only`).
    /// - Throws: ``ConformanceFailure`` listing each failed check and why.
    public static func run(_ harness: Harness, only: Set<String>? = nil) async throws {
        var failures: [String] = []
        for name in checkNames where only?.contains(name) ?? true {
            do {
                try await withHangGuard(harness.checkTimeout, check: name) {
                    let pair = try await Pair.make(harness)
                    do {
                        try await check(name, pair: pair, harness: harness)
                    } catch {
                        await pair.stop()
                        throw error
                    }
                    await pair.stop()
                }
            } catch {
                failures.append("\(name): \(error)")
            }
        }
        if !failures.isEmpty { throw ConformanceFailure(failures: failures) }
    }

    private static func check(_ name: String, pair: Pair, harness: Harness) async throws {
        switch name {
        case "ordering": try await ordering(pair)
        case "frames at and above the MTU": try await mtuLimits(pair)
        case "back-pressure": try await backPressure(pair, limit: harness.backPressureLimitBytes)
        case "close from the dialler": try await closeSemantics(pair, closeDialler: true)
        case "close from the acceptor": try await closeSemantics(pair, closeDialler: false)
        case "dial to a dead address": try await deadDial(pair, harness: harness)
        case "reconnect after the remote restarts": try await reconnect(pair, harness: harness)
        case "malformed input from the remote": try await malformed(pair, harness: harness)
        default: throw ConformanceFailure(failures: ["unknown check \(name)"])
        }
    }

    // MARK: Checks

    static func ordering(_ pair: Pair) async throws {
        let (dialled, accepted) = try await pair.connect()
        let mtu = min(dialled.mtu, accepted.mtu)
        let count = 200
        let sizes = (0..<count).map { index in [1, 2, 17, mtu / 3, mtu / 2, mtu][index % 6] }
        async let forward: Void = expectFrames(on: accepted, sizes: sizes, tag: 0xA0)
        for (index, size) in sizes.enumerated() { try await dialled.send(frame(index, size: size, tag: 0xA0)) }
        try await forward
        async let backward: Void = expectFrames(on: dialled, sizes: sizes, tag: 0xB0)
        for (index, size) in sizes.enumerated() { try await accepted.send(frame(index, size: size, tag: 0xB0)) }
        try await backward
        await dialled.close()
        await accepted.close()
    }

    static func mtuLimits(_ pair: Pair) async throws {
        let (dialled, accepted) = try await pair.connect()
        let mtu = dialled.mtu
        guard mtu >= PacketFramer.minimumMTU else {
            throw ConformanceFailure(failures: [
                "link MTU \(mtu) is below the core's minimum \(PacketFramer.minimumMTU)"
            ])
        }
        let exact = frame(7, size: mtu, tag: 0xC0)
        try await dialled.send(exact)
        let got = try await accepted.receive()
        guard got == exact else {
            throw ConformanceFailure(failures: [
                "a frame of exactly the MTU (\(mtu) bytes) did not arrive intact (got \(got?.count ?? -1) bytes)"
            ])
        }
        do {
            try await dialled.send(frame(8, size: mtu + 1, tag: 0xC0))
            throw ConformanceFailure(failures: ["send of MTU+1 (\(mtu + 1)) bytes did not throw"])
        } catch let error as MeshError {
            guard error.code == .frameTooLarge else {
                throw ConformanceFailure(failures: ["send of MTU+1 threw \(error.code), expected frameTooLarge"])
            }
        }
        // The link still works after the refusal.
        try await dialled.send(exact)
        guard try await accepted.receive() == exact else {
            throw ConformanceFailure(failures: ["the link stopped working after refusing an oversized frame"])
        }
        await dialled.close()
        await accepted.close()
    }

    static func backPressure(_ pair: Pair, limit: Int) async throws {
        let (dialled, accepted) = try await pair.connect()
        let size = dialled.mtu
        let maxFrames = max(64, min(200_000, limit / max(1, size) + 1))
        let sent = Atomic<Int>(0)
        let writer = Task {
            for index in 0..<maxFrames {
                try await dialled.send(frame(index, size: size, tag: 0xD0))
                sent.add(1, ordering: .relaxed)
            }
        }
        // Wait until the writer stops making progress (it is being held back) or
        // finishes everything (no back-pressure).
        var last = -1
        var still = 0
        while still < 4 {
            try await Task.sleep(for: .milliseconds(100))
            let now = sent.load(ordering: .relaxed)
            if now == maxFrames { break }
            still = now == last ? still + 1 : 0
            last = now
        }
        let accepted0 = sent.load(ordering: .relaxed)
        guard accepted0 < maxFrames else {
            writer.cancel()
            throw ConformanceFailure(failures: [
                "sent \(maxFrames) frames (\(maxFrames * size) bytes) while the receiver read nothing: no back-pressure"
            ])
        }
        // Now read everything: all frames arrive in order and the writer finishes.
        for index in 0..<maxFrames {
            guard let got = try await accepted.receive() else {
                throw ConformanceFailure(failures: ["link ended after \(index) of \(maxFrames) frames"])
            }
            guard got == frame(index, size: size, tag: 0xD0) else {
                throw ConformanceFailure(failures: [
                    "frame \(index) arrived damaged or out of order after back-pressure"
                ])
            }
        }
        try await writer.value
        await dialled.close()
        await accepted.close()
    }

    static func closeSemantics(_ pair: Pair, closeDialler: Bool) async throws {
        let (dialled, accepted) = try await pair.connect()
        let (closer, other) = closeDialler ? (dialled, accepted) : (accepted, dialled)
        let last = frame(1, size: min(32, closer.mtu), tag: 0xE0)
        try await closer.send(last)
        // A receive pending on the closing end is woken by close().
        let pending = Task { try await closer.receive() }
        try await Task.sleep(for: .milliseconds(20))
        await closer.close()
        await closer.close()  // idempotent
        let woken = try? await pending.value
        guard woken == nil else {
            throw ConformanceFailure(failures: ["a receive pending on the closing end returned a frame instead of nil"])
        }
        // The other end gets what was sent before the close, then nil (or an error).
        var sawLast = false
        var ended = false
        while !ended {
            do {
                if let got = try await other.receive() {
                    if got == last { sawLast = true }
                } else {
                    ended = true
                }
            } catch {
                ended = true
            }
        }
        guard sawLast else {
            throw ConformanceFailure(failures: ["a frame sent just before close() was lost"])
        }
        do {
            try await closer.send(last)
            throw ConformanceFailure(failures: ["send after close() did not throw"])
        } catch let error as MeshError {
            guard error.code == .linkClosed else {
                throw ConformanceFailure(failures: ["send after close() threw \(error.code), expected linkClosed"])
            }
        }
        // The remote's sends fail eventually (a stream transport may accept a few into
        // kernel buffers first).
        var remoteFailed = false
        for _ in 0..<1000 {
            do {
                try await other.send(last)
                try await Task.sleep(for: .milliseconds(5))
            } catch {
                remoteFailed = true
                break
            }
        }
        guard remoteFailed else {
            throw ConformanceFailure(failures: ["the remote could keep sending on a link closed by its peer"])
        }
        guard try await closer.receive() == nil else {
            throw ConformanceFailure(failures: ["receive() after close() returned a frame"])
        }
        await other.close()
    }

    static func deadDial(_ pair: Pair, harness: Harness) async throws {
        do {
            let link = try await pair.a.transport.dial(harness.deadHint)
            await link.close()
            throw ConformanceFailure(failures: ["dialling \(harness.deadHint) where nothing listens returned a link"])
        } catch let error as MeshError where error.code == .dialFailed {
            // expected
        }
        // The transport still works afterwards.
        let (dialled, accepted) = try await pair.connect()
        try await dialled.send([1, 2, 3])
        guard try await accepted.receive() == [1, 2, 3] else {
            throw ConformanceFailure(failures: ["the transport stopped working after a failed dial"])
        }
        await dialled.close()
        await accepted.close()
    }

    static func reconnect(_ pair: Pair, harness: Harness) async throws {
        let (dialled, _) = try await pair.connect()
        await pair.stopB()
        // The dialler's link ends: receive returns nil or throws.
        do {
            while try await dialled.receive() != nil {}
        } catch {}
        await dialled.close()
        try await pair.restartB()
        let (again, accepted) = try await pair.connect()
        try await again.send([9, 9, 9])
        guard try await accepted.receive() == [9, 9, 9] else {
            throw ConformanceFailure(failures: ["no traffic after the remote restarted"])
        }
        try await accepted.send([8])
        guard try await again.receive() == [8] else {
            throw ConformanceFailure(failures: ["no traffic back after the remote restarted"])
        }
        await again.close()
        await accepted.close()
    }

    static func malformed(_ pair: Pair, harness: Harness) async throws {
        guard let inject = harness.injectMalformed else { return }
        try await inject(pair.hintB)
        // Whatever the transport made of it, it must not hand up oversized frames and
        // must keep serving well-behaved links.
        let (dialled, accepted) = try await pair.connect(skipping: { link in
            Task {
                do {
                    while let frame = try await link.receive() {
                        if frame.count > link.mtu { break }
                    }
                } catch {}
                await link.close()
            }
        })
        try await dialled.send([4, 5, 6])
        guard try await accepted.receive() == [4, 5, 6] else {
            throw ConformanceFailure(failures: ["the transport stopped serving links after malformed input"])
        }
        await dialled.close()
        await accepted.close()
    }

    // MARK: Helpers

    static func frame(_ index: Int, size: Int, tag: UInt8) -> [UInt8] {
        var bytes = [UInt8](repeating: tag, count: size)
        if size >= 1 { bytes[0] = UInt8(truncatingIfNeeded: index >> 8) }
        if size >= 2 { bytes[1] = UInt8(truncatingIfNeeded: index) }
        if size >= 3 { bytes[size - 1] = UInt8(truncatingIfNeeded: index &* 31) }
        return bytes
    }

    static func expectFrames(on link: any Link, sizes: [Int], tag: UInt8) async throws {
        for (index, size) in sizes.enumerated() {
            guard let got = try await link.receive() else {
                throw ConformanceFailure(failures: ["link ended after \(index) of \(sizes.count) frames"])
            }
            guard got == frame(index, size: size, tag: tag) else {
                throw ConformanceFailure(failures: [
                    "frame \(index) (\(size) bytes) arrived as \(got.count) bytes with different content: order or boundaries broken"
                ])
            }
        }
    }

    static func withHangGuard(
        _ timeout: Duration,
        check: String,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            guard try await group.next() == true else {
                throw ConformanceFailure(failures: ["did not finish within \(timeout) (hang guard)"])
            }
        }
    }
}
