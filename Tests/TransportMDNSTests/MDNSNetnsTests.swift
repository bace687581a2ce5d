#if canImport(CAvahi)
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshCore
import MeshTesting
import Testing
import TestSupport

@testable import TransportMDNS

/// Two hosts: `scripts/avahi/netns.sh` makes two network namespaces joined by a veth pair,
/// each with its own D-Bus and avahi-daemon. This test process re-runs itself once in each
/// namespace (the `peerRole` test below, enabled only there); the two find each other,
/// exchange frames over TCP, lose each other when a veth end goes down and find each
/// other again when it comes back up. The parent drives the veth and reads each child's
/// progress file.
@Suite("Two hosts in network namespaces", .serialized)
struct MDNSNetnsTests {
    static let roleKey = "SCMESH_MDNS_NETNS_ROLE"

    @Test(
        "two transports in two namespaces find each other, exchange frames, lose and re-find each other",
        .enabled(if: ProcessInfo.processInfo.environment[MDNSNetnsTests.roleKey] == nil && geteuid() == 0),
        arguments: ["ipv4", "ipv6"]
    )
    func twoHosts(ipMode: String) async throws {
        let prefix = "scmt\(PeerID.random().short.prefix(4))"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-netns").path
        let script = AvahiTestSupport.repositoryRoot.appendingPathComponent("scripts/avahi/netns.sh").path
        let environment = ["SCMESH_NETNS_PREFIX": prefix, "SCMESH_NETNS_DIR": directory, "IP_MODE": ipMode]
        func netns(_ arguments: [String]) throws -> String {
            let result = try AvahiTestSupport.run(
                "/usr/bin/env",
                environment.map { "\($0)=\($1)" } + ["bash", script] + arguments
            )
            guard result.status == 0 else {
                throw TestFailure(
                    "netns.sh \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.output)"
                )
            }
            return result.output
        }
        _ = try netns(["up"])
        defer {
            _ = try? netns(["down"])
            try? FileManager.default.removeItem(atPath: directory)
        }

        let peers = [PeerID.random(), PeerID.random()]
        let executable = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).standardizedFileURL.path
        var children: [(process: ChildProcess, progress: String, log: String)] = []
        for index in 0..<2 {
            let progress = "\(directory)/peer\(index + 1).progress"
            let log = "\(directory)/peer\(index + 1).log"
            _ = FileManager.default.createFile(atPath: progress, contents: nil)
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            defer { try? handle.close() }
            let child = try ChildProcess(
                executable: "/usr/bin/env",
                arguments: environment.map { "\($0)=\($1)" } + [
                    "bash", script, "exec", "\(index + 1)", "env",
                    "\(Self.roleKey)=\(index == 0 ? "dial" : "accept")",
                    "SCMESH_MDNS_NETNS_SELF=\(peers[index].hex)",
                    "SCMESH_MDNS_NETNS_REMOTE=\(peers[1 - index].hex)",
                    "SCMESH_MDNS_NETNS_INTERFACE=veth\(index + 1)",
                    "SCMESH_MDNS_NETNS_IP_MODE=\(ipMode)",
                    "SCMESH_MDNS_NETNS_PROGRESS=\(progress)",
                    executable, "--testing-library", "swift-testing", "--filter", "MDNSNetnsTests/peerRole",
                ],
                environment: ProcessInfo.processInfo.environment,
                standardOutput: .handle(handle),
                standardError: .handle(handle)
            )
            children.append((child, progress, log))
        }

        func waitAll(_ marker: String) async throws {
            let deadline = ContinuousClock.now + .seconds(150)
            while ContinuousClock.now < deadline {
                let reached = children.map { child in
                    let text = (try? String(contentsOfFile: child.progress, encoding: .utf8)) ?? ""
                    return text.split(separator: "\n").contains { $0.hasPrefix(marker) }
                }
                if reached.allSatisfy({ $0 }) { return }
                // A child that ended without reaching the marker will never reach it.
                if zip(children, reached).contains(where: { !$0.process.isRunning && !$1 }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            let report = children.enumerated().map { index, child in
                let progress = (try? String(contentsOfFile: child.progress, encoding: .utf8)) ?? ""
                let log = (try? String(contentsOfFile: child.log, encoding: .utf8)) ?? ""
                return "peer \(index + 1) progress:\n\(progress)\npeer \(index + 1) log (tail):\n\(log.suffix(3000))"
            }
            let browses = (1...2).map { host in
                let output =
                    (try? netns(["exec", "\(host)", "avahi-browse", "-prt", "_scmesh._tcp"])) ?? "(avahi-browse failed)"
                return "avahi-browse -prt in host \(host) now:\n\(output)"
            }
            throw TestFailure(
                "not every peer reached '\(marker)':\n" + (report + browses).joined(separator: "\n")
            )
        }

        try await waitAll("exchanged")
        let addresses = children.map { (try? String(contentsOfFile: $0.progress, encoding: .utf8)) ?? "" }
        if ipMode == "ipv6" {
            // The hint each side dialled or saw is a scoped link-local address.
            #expect(addresses[0].contains("found [fe80::") && addresses[0].contains("%veth1]:"), "\(addresses[0])")
            #expect(addresses[1].contains("found [fe80::") && addresses[1].contains("%veth2]:"), "\(addresses[1])")
        } else {
            #expect(addresses[0].contains("found 10.213.0.2:"), "\(addresses[0])")
            #expect(addresses[1].contains("found 10.213.0.1:"), "\(addresses[1])")
        }
        _ = try netns(["link", "1", "down"])
        try await waitAll("lost")
        _ = try netns(["link", "1", "up"])
        try await waitAll("refound")
        // Only now may the peers stop: one that stopped earlier would withdraw its
        // service before the other had found it again.
        _ = FileManager.default.createFile(atPath: "\(directory)/done", contents: nil)
        let timeline = children.map { (try? String(contentsOfFile: $0.progress, encoding: .utf8)) ?? "" }
        print(
            "mDNS two hosts (\(ipMode)), time since each peer's start: "
                + timeline.map {
                    $0.split(separator: "\n").joined(separator: ", ")
                }.joined(separator: " | ")
        )
        for child in children {
            try await eventually("a peer's test run ends (\(child.log))", attempts: 12000) { !child.process.isRunning }
            #expect(child.process.terminationStatus == 0, "a peer's test run failed; see \(child.log)")
        }
    }

    /// One side of ``twoHosts(ipMode:)``; runs only inside a namespace, started by it.
    @Test(
        "peer role inside a namespace (started by the two-hosts test)",
        .enabled(if: ProcessInfo.processInfo.environment[MDNSNetnsTests.roleKey] != nil)
    )
    func peerRole() async throws {
        let environment = ProcessInfo.processInfo.environment
        let dials = environment[Self.roleKey] == "dial"
        let me = try #require(environment["SCMESH_MDNS_NETNS_SELF"].flatMap(PeerID.init(hex:)))
        let remote = try #require(environment["SCMESH_MDNS_NETNS_REMOTE"].flatMap(PeerID.init(hex:)))
        let interface = try #require(environment["SCMESH_MDNS_NETNS_INTERFACE"])
        let ipv6 = environment["SCMESH_MDNS_NETNS_IP_MODE"] == "ipv6"
        let progressPath = try #require(environment["SCMESH_MDNS_NETNS_PROGRESS"])
        let progress = try FileHandle(forWritingTo: URL(fileURLWithPath: progressPath))
        let started = ContinuousClock.now
        func report(_ line: String) {
            let elapsed = (ContinuousClock.now - started).components
            let milliseconds = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
            progress.seekToEndOfFile()
            progress.write(Data((line + " (+\(milliseconds) ms)\n").utf8))
        }

        var logger = Logger(label: "netns.\(interface)")
        logger.logLevel = .debug
        let transport = MDNSTransport(
            configuration: .init(
                interfaces: [interface],
                listen: [ipv6 ? "[::]:0" : "0.0.0.0:0"],
                ipv6: ipv6
            )
        )
        let running = try await RunningTransport.start(transport, localPeerID: me, logger: logger)
        let events = EventCollector(running.events)
        do {
            let discovered: @Sendable (TransportEvent) -> Bool = {
                if case .peerDiscovered(let hint) = $0 { return hint.peerID == remote } else { return false }
            }
            guard case .peerDiscovered(let hint) = try await events.next(timeout: .seconds(90), where: discovered)
            else {
                throw TestFailure("no hint")
            }
            report("found \(hint.address)")
            if dials {
                let link = try await transport.dial(hint)
                try await link.send(Array("ping".utf8))
                #expect(try await link.receive() == Array("pong".utf8))
                await link.close()
            } else {
                guard
                    case .inboundLink(let link) = try await events.next(
                        timeout: .seconds(90),
                        where: {
                            if case .inboundLink = $0 { return true } else { return false }
                        }
                    )
                else { throw TestFailure("no link") }
                #expect(try await link.receive() == Array("ping".utf8))
                try await link.send(Array("pong".utf8))
                #expect(try await link.receive() == nil)
            }
            report("exchanged")
            _ = try await events.next(timeout: .seconds(90)) {
                if case .peerLost(let lost) = $0 { return lost.peerID == remote } else { return false }
            }
            report("lost")
            _ = try await events.next(timeout: .seconds(90), where: discovered)
            report("refound")
            let done = URL(fileURLWithPath: progressPath).deletingLastPathComponent().appendingPathComponent("done")
                .path
            let deadline = ContinuousClock.now + .seconds(120)
            while !FileManager.default.fileExists(atPath: done) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
        } catch {
            report("failed: \(error)")
            await running.stop()
            throw error
        }
        await running.stop()
    }
}

#endif
