import MeshCore
import MeshTesting
import TestSupport
import Testing
import TransportTCP

/// The shared transport conformance suite, run against TCP on loopback.
@Suite(.timeLimit(.minutes(5)))
struct TCPConformanceTests {
    /// Default frame limit (a 0xFFFF prefix is legal, so the injected garbage is cut off by
    /// EOF) and a small one (the same prefix is over the limit).
    @Test(arguments: [65535, 4096])
    func conformance(maxFrameSize: Int) async throws {
        try await TransportConformance.run(try .tcp(maxFrameSize: maxFrameSize))
    }
}

extension TransportConformance.Harness {
    /// TCP transports listening on fixed free loopback ports (one per index, so a
    /// restarted side B listens where it did); malformed input is a raw socket writing a
    /// 0xFFFF length prefix, garbage, then closing.
    static func tcp(maxFrameSize: Int = 65535) throws -> Self {
        let ports = [try freeLoopbackPort(), try freeLoopbackPort()]
        let deadPort = try freeLoopbackPort()
        return Self(
            makeTransport: { index in
                TCPTransport(
                    configuration: .init(listen: ["127.0.0.1:\(ports[index])"], maxFrameSize: maxFrameSize)
                )
            },
            hint: { transport, _ in
                let address = try #require((transport as? TCPTransport)?.boundAddresses.first)
                return PeerHint(transport: "tcp", address: address)
            },
            deadHint: PeerHint(transport: "tcp", address: "127.0.0.1:\(deadPort)"),
            injectMalformed: { hint in
                let client = try RawTCPClient(port: try TCPAddress(hint.address).port)
                try client.write([0xFF, 0xFF] + (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
                client.finishWriting()
                _ = await client.closedByServer()
            },
            // A hang guard, not a speed limit: "ordering" moves ≈ 4 MB each way in 64 KiB
            // frames through a debug build, and beside two simulator runs (load average
            // 10) it took over 30 s twice here.
            checkTimeout: .seconds(120)
        )
    }
}
