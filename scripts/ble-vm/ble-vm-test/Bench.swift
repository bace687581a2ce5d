// The benchmark's link loops (ble-vm-test bench and echo), on the caller's isolation: the
// main actor, Swift's global pool or BLETransport.linkExecutor (see --executor).
import MeshCore

/// Echoes every packet of `link` until it closes, on the caller's isolation (see --executor).
func echoLoop(_ link: any Link, isolation: isolated (any Actor)? = #isolation) async throws {
    while let packet = try await link.receive() { try await link.send(packet) }
}

/// The benchmark rounds on `link`, on the caller's isolation (see --executor).
func benchLoop(_ link: any Link, isolation: isolated (any Actor)? = #isolation) async throws {
    let small = [UInt8](repeating: 0xA5, count: 64)
    for round in 1...options.rounds {
        var total = Duration.zero
        var best = Duration.seconds(1000)
        var samples: [Duration] = []
        samples.reserveCapacity(options.rtts)
        for _ in 0..<options.rtts {
            let start = ContinuousClock.now
            try await link.send(small)
            guard try await link.receive()?.count == 64 else { fatal("rtt echo missing") }
            let elapsed = start.duration(to: .now)
            total += elapsed
            best = min(best, elapsed)
            samples.append(elapsed)
        }
        samples.sort()
        let median = samples.isEmpty ? .zero : samples[samples.count / 2]
        say("bench: round \(round) rtt count=\(options.rtts) size=64 mean=\(ms(total / options.rtts)) ms min=\(ms(best)) ms median=\(ms(median)) ms")
        let packets = (options.bulk + link.mtu - 1) / link.mtu
        let payload = [UInt8](repeating: 0x5A, count: link.mtu)
        let bulkStart = ContinuousClock.now
        async let drained: (Int, [ContinuousClock.Instant]) = {
            var bytes = 0
            var arrivals: [ContinuousClock.Instant] = []
            arrivals.reserveCapacity(packets)
            for _ in 0..<packets {
                guard let packet = try await link.receive() else { fatal("bulk: link closed early") }
                arrivals.append(.now)
                bytes += packet.count
            }
            return (bytes, arrivals)
        }()
        var blocked = Duration.zero
        for _ in 0..<packets {
            let before = ContinuousClock.now
            try await link.send(payload)
            let took = before.duration(to: .now)
            if took > .milliseconds(1) { blocked += took }
        }
        let (bytes, arrivals) = try await drained
        let elapsed = bulkStart.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        say("bench: round \(round) bulk bytes=\(bytes) packets=\(packets) mtu=\(link.mtu) seconds=\(fixed(seconds, 3)) throughput=\(fixed(Double(bytes) / seconds / 1000, 1)) kB/s (echoed, payload each way)")
        // Idle gaps, as cocecho reports them: echoes more than 5 ms after the previous one.
        var last = bulkStart
        var gaps = Duration.zero
        var longest = Duration.zero
        var count = 0
        for arrival in arrivals {
            let gap = last.duration(to: arrival)
            last = arrival
            longest = max(longest, gap)
            if gap > .milliseconds(5) {
                gaps += gap
                count += 1
            }
        }
        say("bench: round \(round) bulk-trace gaps_over_5ms=\(count) gap_sum=\(ms(gaps)) ms longest_gap=\(ms(longest)) ms writer_blocked=\(ms(blocked)) ms")
    }
}
