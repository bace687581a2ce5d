import Foundation
import MeshCore
import MeshTesting
import TestSupport
import Testing
import TransportTCP

#if canImport(Glibc)
import Glibc
#endif

/// Listening on and dialling a real IPv6 link-local address with a zone
/// (`[fe80::b%scmvb]:port`), the form the mDNS transport resolves peers to.
///
/// The outer test re-runs this test binary inside a private network namespace
/// (`unshare --net`) that holds a veth pair with fixed link-local addresses, and runs the
/// inner test there; nothing outside that namespace is touched. Needs root, unshare and
/// iproute2 (disabled where a namespace with a veth pair cannot be made).
@Suite(.timeLimit(.minutes(3)))
struct TCPLinkLocalTests {
    static let innerFlag = "SCMESH_TCP_LINK_LOCAL_INNER"
    static var isInner: Bool { ProcessInfo.processInfo.environment[innerFlag] != nil }
    /// Whether this process may make a network namespace with a veth pair in it.
    static var canMakeNamespace: Bool {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return false }
        guard
            let probe = try? ChildProcess(
                executable: "/usr/bin/unshare",
                arguments: ["--net", "sh", "-c", "ip link add scmva type veth peer name scmvb"],
                environment: ProcessInfo.processInfo.environment
            )
        else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }

    @Test(.enabled(if: !isInner && canMakeNamespace, "needs root, unshare and iproute2 (veth)"))
    func linkLocalAddressWithZoneInAPrivateNamespace() async throws {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let setup = [
            "ip link set lo up",
            "ip link add scmva type veth peer name scmvb",
            "ip link set scmva up",
            "ip link set scmvb up",
            "ip -6 addr add fe80::a/64 dev scmva nodad",
            "ip -6 addr add fe80::b/64 dev scmvb nodad",
        ].joined(separator: " && ")
        var environment = ProcessInfo.processInfo.environment
        environment[Self.innerFlag] = "1"
        let output = Pipe()
        let process = try ChildProcess(
            executable: "/usr/bin/unshare",
            arguments: [
                "--net", "sh", "-c",
                setup + #" && exec "$0" --testing-library swift-testing --filter linkLocalInner"#,
                executable,
            ],
            environment: environment,
            standardOutput: .descriptor(output.fileHandleForWriting.fileDescriptor),
            standardError: .pipe(output)
        )
        // The inner run takes a while: its blocking wait must not hold a thread of the
        // cooperative pool the tests running beside this one need.
        let data = try await onOwnThread {
            let data = try output.fileHandleForReading.readToEnd() ?? Data()
            process.waitUntilExit()
            return data
        }
        let text = String(decoding: data, as: UTF8.self)
        #expect(process.terminationStatus == 0, "inner run failed:\n\(text)")
        #expect(text.contains("linkLocalInner()") && text.contains("passed"), "the inner test did not run:\n\(text)")
    }

    /// Runs only inside the namespace made by the test above.
    @Test(.enabled(if: isInner))
    func linkLocalInner() async throws {
        let server = try await Listening.start(.init(listen: ["[fe80::b%scmvb]:0"]))
        let bound = try server.address
        #expect(bound.hasPrefix("[fe80::b%scmvb]:"), "bound \(bound)")
        let port = try TCPAddress(bound).port

        let client = try await Listening.start(.init(listen: []))
        // Dial through the other end of the pair, as a peer on that link would.
        let link = try await client.dial("[fe80::b%scmva]:\(port)")
        let accepted = try await server.events.nextInboundLink()
        try await link.send([1, 2, 3])
        #expect(try await accepted.receive() == [1, 2, 3])
        try await accepted.send([4])
        #expect(try await link.receive() == [4])
        #expect(accepted.remoteAddress.hasPrefix("[fe80::"), "remote \(accepted.remoteAddress)")
        await client.stop()
        await server.stop()
    }
}
