// The daemon tests need Avahi support compiled in (the MDNS trait, on by default).
#if MDNS && !canImport(CAvahi)
#error("the MDNS trait is on, but the tests cannot import CAvahi")
#endif

#if canImport(CAvahi)
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MeshCore
import Testing
import TestSupport

@testable import TransportMDNS

/// Helpers for tests that need the real avahi-daemon started by `scripts/avahi/start.sh`.
enum AvahiTestSupport {
    /// How long any one expectation waits before failing (never a speed assertion).
    static let timeout: Duration = .seconds(15)

    /// The service type every test here publishes and browses: one of this test process's
    /// own, so an SCMesh node sharing the avahi-daemon (on `_scmesh._tcp`) or another test
    /// run is never taken for a test's peer.
    static let serviceType = "_scmt\(getpid() % 100_000)._tcp"

    /// The repository root (the test sources may be reached through a symlink).
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `scripts/avahi/loopback.sh`.
    static var loopbackScript: String {
        repositoryRoot.appendingPathComponent("scripts/avahi/loopback.sh").path
    }

    static let hint = "start it with scripts/avahi/start.sh before `swift test` (and scripts/avahi/stop.sh after)"

    static func logger(_ label: String) -> Logger {
        var logger = Logger(label: "test.mdns.\(label)")
        logger.logLevel = ProcessInfo.processInfo.environment["SCMESH_TEST_LOG"] == nil ? .warning : .trace
        return logger
    }

    /// Fails the test (with a message naming the script) unless an avahi-daemon answers
    /// on the system bus within a few seconds.
    static func requireDaemon() async throws {
        var options = MDNSDiscoveryOptions(
            serviceType: AvahiTestSupport.serviceType,
            serviceName: "probe",
            publish: [],
            txt: MDNSTXTRecord(identity: nil)
        )
        options.browse = false
        options.waitForDaemon = true
        let probe = try await RunningDiscovery.start(options: options, logger: logger("probe"))
        let events = EventCollector(probe.discovery.events)
        let available = try? await events.next(timeout: .seconds(5)) {
            if case .daemon(available: true) = $0 { return true }
            return false
        }
        await probe.stop()
        guard available != nil else {
            throw TestFailure("no avahi-daemon answers on the D-Bus system bus; \(hint)")
        }
    }

    /// Runs the loopback script (`stop-avahi`, `start-avahi`).
    static func loopback(_ verb: String) throws {
        let result = try run("/bin/bash", [loopbackScript, verb])
        guard result.status == 0 else {
            throw TestFailure("scripts/avahi/loopback.sh \(verb) failed (\(result.status)): \(result.output)")
        }
    }

    /// Runs a command to completion and returns its exit status and output (stdout + stderr).
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        // A file, not a pipe: a daemon the command starts must not keep us waiting for EOF.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "mdns-test-\(PeerID.random().short).out"
        ).path
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? output.close() }
        let process = try ChildProcess(
            executable: executable,
            arguments: arguments,
            environment: ProcessInfo.processInfo.environment,
            standardOutput: .handle(output),
            standardError: .handle(output)
        )
        process.waitUntilExit()
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return (process.terminationStatus, text)
    }

    /// Ends a child process with SIGKILL and reaps it. (A child started from a Swift
    /// concurrency thread inherits that thread's blocked signals, so SIGTERM stays
    /// pending; the daemon withdraws a killed client's services all the same.)
    static func kill(_ process: ChildProcess) {
        process.kill()
    }

    /// The full path of a command on `PATH`.
    static func which(_ command: String) throws -> String {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw TestFailure("\(command) is not installed; scripts/avahi/start.sh installs avahi-utils")
    }

    static func randomName(_ prefix: String) -> String {
        "\(prefix)-\(PeerID.random().short)"
    }

    /// Options for a discovery that publishes a (fake) port and browses.
    static func options(
        name: String,
        port: UInt16?,
        peer: PeerID,
        revealIdentity: Bool = true,
        interfaces: [String] = []
    ) -> MDNSDiscoveryOptions {
        var options = MDNSDiscoveryOptions(
            serviceType: AvahiTestSupport.serviceType,
            serviceName: name,
            publish: port.map { [MDNSPublishTarget(family: .ipv4, port: $0)] } ?? [],
            txt: MDNSTXTRecord(identity: revealIdentity ? peer : nil)
        )
        options.interfaces = interfaces
        options.ownPeerID = peer
        options.ipv6 = false
        return options
    }
}

/// An ``MDNSDiscovery`` started, with its ``MDNSDiscovery/run()`` in a task of its own.
struct RunningDiscovery: Sendable {
    let discovery: MDNSDiscovery
    private let task: Task<Void, Never>

    /// Makes and starts a discovery, then runs it.
    static func start(
        options: MDNSDiscoveryOptions,
        logger: Logger,
        clock: any MeshClock = .system
    ) async throws -> RunningDiscovery {
        let discovery = try MDNSDiscovery(options: options, logger: logger, clock: clock)
        try await discovery.start()
        return RunningDiscovery(discovery: discovery, task: Task { await discovery.run() })
    }

    /// Cancels `run()` and waits until it withdrew everything.
    func stop() async {
        task.cancel()
        await task.value
    }
}

/// A test failure with a message.
struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Consumes an `AsyncStream` into a buffer so a test can wait for the next element
/// matching a predicate, with a timeout.
final class EventCollector<Element: Sendable>: Sendable {
    private let buffer = BufferBox<Element>()
    private let task: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let buffer = self.buffer
        task = Task {
            for await element in stream { await buffer.append(element) }
            await buffer.finish()
        }
    }

    deinit { task.cancel() }

    /// Everything received so far.
    func all() async -> [Element] { await buffer.elements }

    /// Waits for (and consumes up to) the next element matching `predicate`.
    /// - Throws: ``TestFailure`` when none arrives in time or the stream ended first.
    func next(
        timeout: Duration = AvahiTestSupport.timeout,
        sourceLocation: SourceLocation = #_sourceLocation,
        where predicate: @escaping @Sendable (Element) -> Bool
    ) async throws -> Element {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let element = await buffer.take(where: predicate) { return element }
            if await buffer.isFinished { throw TestFailure("the event stream ended before the expected event") }
            if ContinuousClock.now >= deadline {
                let seen = await buffer.seen
                throw TestFailure("no matching event within \(timeout); events seen: \(seen)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits `duration` and returns whether any element matching `predicate` arrived.
    func none(during duration: Duration, where predicate: @escaping @Sendable (Element) -> Bool) async throws -> Bool {
        try await Task.sleep(for: duration)
        return await !buffer.elements.contains(where: predicate)
    }
}

private actor BufferBox<Element: Sendable> {
    var elements: [Element] = []
    var seen: [String] = []
    var isFinished = false

    func append(_ element: Element) {
        elements.append(element)
        seen.append(String(describing: element))
    }

    func finish() { isFinished = true }

    func take(where predicate: (Element) -> Bool) -> Element? {
        guard let index = elements.firstIndex(where: predicate) else { return nil }
        let element = elements[index]
        elements.remove(at: index)
        return element
    }
}

#endif
