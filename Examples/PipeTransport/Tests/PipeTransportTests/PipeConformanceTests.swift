import Foundation
import Glibc
import MeshCore
import MeshTesting
import PipeTransport
import Testing

/// The SCMesh transport conformance suite, run against PipeTransport.
@Suite(.timeLimit(.minutes(5)))
struct PipeConformanceTests {
    @Test(arguments: [65_535, 64])
    func conformance(mtu: Int) async throws {
        var template = Array("/tmp/scmesh-pipe-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await TransportConformance.run(.pipe(mtu: mtu, directory: directory))
    }
}

extension TransportConformance.Harness {
    /// Two transports listening on socket paths in `directory` (side B again at its own
    /// path after a restart); malformed input is a packet over the MTU.
    static func pipe(mtu: Int, directory: String) -> Self {
        Self(
            makeTransport: { index in PipeTransport(configuration: .init(listen: "\(directory)/\(index).sock", mtu: mtu)) },
            hint: { transport, index in PeerHint(transport: "pipe", address: "\(directory)/\(index).sock") },
            deadHint: PeerHint(transport: "pipe", address: "\(directory)/nobody.sock"),
            injectMalformed: { hint in
                let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0)
                defer { close(fd) }
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(hint.address.utf8)) }
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
                try #require(connected == 0)
                let oversized = [UInt8](repeating: 0xEE, count: mtu + 100)
                #expect(send(fd, oversized, oversized.count, Int32(MSG_NOSIGNAL)) == oversized.count)
            }
        )
    }
}
