import Foundation
import Logging
import MeshCore
import MeshTesting
import TransportTCP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// TCP figures on loopback: raw-socket baselines, and the TCP transport's links on their
/// own (no router, no Noise), each next to the matching baseline.
///
/// The raw baselines use plain blocking BSD sockets on two dedicated threads, so they
/// measure the kernel's loopback path and nothing of SwiftNIO or Swift concurrency.
enum TCPBench {
    /// Bytes moved one way by the bulk figures.
    static let bulkBytes = 256 << 20
    /// Size of a ping-pong or small message.
    static let smallMessage = 64
    /// Timed ping-pong rounds (after a warm-up).
    static let rounds = 20_000
    static let warmupRounds = 2_000

    /// Figure names, so callers can pick baselines by name.
    static let rawBulkName = "raw TCP bulk 256 MiB one way (plain sockets)"
    static let rawRTT50Name = "raw TCP 64 B ping-pong RTT p50"
    static let rawRTT99Name = "raw TCP 64 B ping-pong RTT p99"

    /// Raw loopback TCP throughput (MB/s, 10^6 bytes) and 64-byte ping-pong round trip
    /// p50/p99 (µs) on plain sockets: the baselines the full stack is compared with.
    static func rawBaselines() async throws -> [BenchFigure] {
        let megabytesPerSecond = try await RawTCP.bulk(bytes: bulkBytes)
        let samples = try await RawTCP.onThread {
            try RawTCP.pingPong(size: smallMessage, rounds: rounds, warmup: warmupRounds)
        }
        return [
            BenchFigure(name: rawBulkName, value: megabytesPerSecond, unit: "MB/s"),
            BenchFigure(name: rawRTT50Name, value: percentile(samples, 0.50), unit: "µs"),
            BenchFigure(name: rawRTT99Name, value: percentile(samples, 0.99), unit: "µs"),
        ]
    }

    /// The TCP transport's links alone (framing, NIO, back-pressure; no router, no
    /// Noise): bulk MB/s in max-size frames, 64-byte frames per second, and ping-pong RTT,
    /// with ratios against `baselines` (from ``rawBaselines()``) when given.
    static func linkFigures(baselines: [BenchFigure] = []) async throws -> [BenchFigure] {
        func baseline(_ name: String) -> (name: String, value: Double)? {
            baselines.first { $0.name == name }.map { (name: $0.name, value: $0.value) }
        }
        var logger = Logger(label: "bench.tcp")
        logger.logLevel = .warning
        let server = try await RunningTransport.start(
            TCPTransport(configuration: .init(listen: ["127.0.0.1:0"])),
            logger: logger
        )
        let client: RunningTransport
        do {
            client = try await RunningTransport.start(TCPTransport(configuration: .init(listen: [])), logger: logger)
        } catch {
            await server.stop()
            throw error
        }
        do {
            let figures = try await measureLinks(server: server, client: client.transport, baseline: baseline)
            await client.stop()
            await server.stop()
            return figures
        } catch {
            await client.stop()
            await server.stop()
            throw error
        }
    }

    private static func measureLinks(
        server: RunningTransport,
        client: any Transport,
        baseline: (String) -> (name: String, value: Double)?
    ) async throws -> [BenchFigure] {
        let accepted = Task { () -> (any Link)? in
            for await event in server.events {
                if case .inboundLink(let link) = event { return link }
            }
            return nil
        }
        guard let address = server.addresses.first else {
            throw MeshError(.transportUnavailable, "bench server did not bind")
        }
        let dialled = try await client.dial(PeerHint(transport: "tcp", address: address))
        guard let receiver = await accepted.value else {
            throw MeshError(.linkClosed, "bench server reported no inbound link")
        }

        // Bulk: 256 MiB in MTU-sized frames.
        let mtu = dialled.mtu
        let frames = bulkBytes / mtu + 1
        let bulkSeconds = try await timed {
            async let drained: Int = drain(receiver, frames: frames)
            let frame = [UInt8](repeating: 0x5A, count: mtu)
            for _ in 0..<frames { try await dialled.send(frame) }
            _ = try await drained
        }
        let bulk = Double(frames * mtu) / bulkSeconds / 1e6

        // Small frames: one way, all received.
        let smallCount = 200_000
        let smallSeconds = try await timed {
            async let drained: Int = drain(receiver, frames: smallCount)
            let frame = [UInt8](repeating: 0x33, count: smallMessage)
            for _ in 0..<smallCount { try await dialled.send(frame) }
            let got = try await drained
            guard got == smallCount else {
                throw MeshError(.deliveryFailed, "bench lost small frames: \(got) of \(smallCount)")
            }
        }

        // Ping-pong through the links.
        let echo = Task {
            while let frame = try await receiver.receive() { try await receiver.send(frame) }
        }
        let ping = [UInt8](repeating: 0x11, count: smallMessage)
        var samples: [Double] = []
        samples.reserveCapacity(rounds)
        let clock = ContinuousClock()
        for round in 0..<(warmupRounds + rounds) {
            let start = clock.now
            try await dialled.send(ping)
            guard try await dialled.receive() != nil else {
                throw MeshError(.linkClosed, "echo link ended")
            }
            if round >= warmupRounds { samples.append(microseconds(clock.now - start)) }
        }
        await dialled.close()
        _ = try? await echo.value

        return [
            BenchFigure(
                name: "TCPTransport link bulk 256 MiB one way",
                value: bulk,
                unit: "MB/s",
                baseline: baseline(rawBulkName)
            ),
            BenchFigure(
                name: "TCPTransport link 64 B frames one way",
                value: Double(smallCount) / smallSeconds,
                unit: "frames/s"
            ),
            BenchFigure(
                name: "TCPTransport link 64 B ping-pong RTT p50",
                value: percentile(samples, 0.50),
                unit: "µs",
                baseline: baseline(rawRTT50Name)
            ),
            BenchFigure(
                name: "TCPTransport link 64 B ping-pong RTT p99",
                value: percentile(samples, 0.99),
                unit: "µs",
                baseline: baseline(rawRTT99Name)
            ),
        ]
    }

    // MARK: Helpers

    private static func drain(_ link: any Link, frames: Int) async throws -> Int {
        var count = 0
        while count < frames, try await link.receive() != nil { count += 1 }
        return count
    }

    private static func timed(_ body: () async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        return seconds(clock.now - start)
    }

    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    static func microseconds(_ duration: Duration) -> Double { seconds(duration) * 1e6 }

    static func percentile(_ samples: [Double], _ fraction: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let sorted = samples.sorted()
        let index = min(sorted.count - 1, max(0, Int((Double(sorted.count) * fraction).rounded(.up)) - 1))
        return sorted[index]
    }

}

/// Plain blocking BSD sockets on loopback: the baseline measurements.
enum RawTCP {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs blocking socket work on its own thread, off the concurrency pool.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try body() })
            }
        }
    }

    /// MB/s (10^6 bytes per second) for `bytes` written one way, from the sender's first
    /// write to the receiver's last read.
    static func bulk(bytes: Int) async throws -> Double {
        let (listener, port) = try makeListener()
        defer { close(listener) }
        async let receiverDone: ContinuousClock.Instant = onThread {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { throw Failure(description: "accept failed: errno \(errno)") }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            var received = 0
            while received < bytes {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard count > 0 else { throw Failure(description: "bulk receiver read \(count)") }
                received += count
            }
            return ContinuousClock.now
        }
        let senderStart: ContinuousClock.Instant = try await onThread {
            let fd = try connectLoopback(port: port)
            defer { close(fd) }
            let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
            let start = ContinuousClock.now
            var sent = 0
            while sent < bytes {
                let count = chunk.withUnsafeBytes { write(fd, $0.baseAddress, min($0.count, bytes - sent)) }
                guard count > 0 else { throw Failure(description: "bulk sender write \(count)") }
                sent += count
            }
            return start
        }
        let elapsed = TCPBench.seconds(try await receiverDone - senderStart)
        return Double(bytes) / elapsed / 1e6
    }

    /// Round-trip times in µs of `size`-byte messages echoed by a second thread.
    static func pingPong(size: Int, rounds: Int, warmup: Int) throws -> [Double] {
        let (listener, port) = try makeListener()
        defer { close(listener) }
        Thread.detachNewThread {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            defer { close(fd) }
            setNoDelay(fd)
            var buffer = [UInt8](repeating: 0, count: size)
            while readExactly(fd, &buffer) {
                guard writeAll(fd, buffer) else { return }
            }
        }
        let fd = try connectLoopback(port: port)
        defer { close(fd) }
        setNoDelay(fd)
        let message = [UInt8](repeating: 0x11, count: size)
        var reply = [UInt8](repeating: 0, count: size)
        var samples: [Double] = []
        samples.reserveCapacity(rounds)
        let clock = ContinuousClock()
        for round in 0..<(warmup + rounds) {
            let start = clock.now
            guard writeAll(fd, message), readExactly(fd, &reply) else {
                throw Failure(description: "ping-pong broke at round \(round)")
            }
            if round >= warmup { samples.append(TCPBench.microseconds(clock.now - start)) }
        }
        return samples
    }

    private static func makeListener() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard ok else {
            close(fd)
            throw Failure(description: "bind/listen failed: errno \(errno)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    private static func connectLoopback(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(port: port)
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard ok else {
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
        return fd
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func readExactly(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var offset = 0
        let total = buffer.count
        while offset < total {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, total - offset) }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }
}
