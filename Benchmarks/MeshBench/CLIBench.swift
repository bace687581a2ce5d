import Foundation
import MeshCore

/// `scmesh send` from the shell: one process per message against two running release
/// nodes over TCP on loopback, next to `scmesh status` (the same process start and
/// control-socket round trip, no message) in the same run.
enum CLIBench {
    /// The `scmesh` binary next to this one (`swift build -c release` builds both).
    static var scmesh: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("scmesh").path
    }

    /// Starts `scmesh` with `arguments` (a node, stopped by ``NodePair/stop()``); timed
    /// commands go through ``TimedRun`` instead.
    static func launch(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: scmesh)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func output(_ arguments: [String]) throws -> String {
        let pipe = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: scmesh)
        process.arguments = arguments
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func timed(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count { try body() }
        return Double(count) / TCPBench.seconds(ContinuousClock.now - start)
    }

    /// `scmesh send -` of 10 MiB between two release nodes over TCP on loopback (the
    /// CLI posts the raw payload to the node's HTTP API), once returning when queued and
    /// once with `--wait` (returning on the delivery receipt), against the in-process
    /// full-stack bulk rate measured in the same run. `nodeSettings` (`--set KEY=VALUE`
    /// pairs) go to both nodes. `otherClient`, another `scmesh` binary (e.g. built with
    /// `--static-swift-stdlib`), sends "queued" rounds and starts in turns with the
    /// default one, so both meet the same machine load.
    static func bulk(nodeSettings: [String] = [], otherClient: String? = nil) async throws -> [BenchFigure] {
        guard FileManager.default.isExecutableFile(atPath: scmesh) else {
            throw MeshError(
                .invalidArgument,
                "no scmesh next to MeshBench (\(scmesh)); build it: swift build -c release"
            )
        }
        let inProcess = try await RouterBench.fullStackBulk()
        let root = "/tmp/scmesh-bulk-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let pair = try await NodePair.start(
            root: root,
            port: 20_000 + Int(getpid() % 10_000),
            extra: ["--set", "http.listen=127.0.0.1:0"] + nodeSettings
        )
        defer { pair.stop() }
        let (a, peerB) = (pair.a, pair.peerB)
        let size = 10 * 1024 * 1024
        let file = root + "/payload"
        _ = FileManager.default.createFile(
            atPath: file,
            contents: Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        )
        if let otherClient, !FileManager.default.isExecutableFile(atPath: otherClient) {
            throw MeshError(.invalidArgument, "--client \(otherClient): no executable there")
        }
        func send(_ extra: [String], client: String = scmesh) throws -> Double {
            Double(size) / 1e6
                / (try TimedRun.run(client, ["send", "--data-dir", a] + extra + [peerB, "-"], input: file))
        }
        _ = try send(["--wait"])  // warm-up
        let rounds = 5
        var queuedRounds: [Double] = []
        var otherQueuedRounds: [Double] = []
        for _ in 0..<rounds {
            queuedRounds.append(try send([]))
            if let otherClient { otherQueuedRounds.append(try send([], client: otherClient)) }
        }
        let queued = queuedRounds.sorted()[rounds / 2]
        let delivered = try (0..<rounds).map { _ in try send(["--wait"]) }.sorted()[rounds / 2]
        // One send at a time, as a user sends one file: each waits (untimed) until the
        // previous message was delivered, so neither node is still moving or storing
        // it. Back to back above, every send shares the CPUs and the disk with the
        // previous message's delivery (node a sealing and sending it, node b writing
        // and syncing its inbox copy).
        var isolatedRounds: [Double] = []
        var otherIsolatedRounds: [Double] = []
        for _ in 0..<rounds {
            try await pair.waitUntilOutboxEmpty()
            isolatedRounds.append(try send([]))
            if let otherClient {
                try await pair.waitUntilOutboxEmpty()
                otherIsolatedRounds.append(try send([], client: otherClient))
            }
        }
        try await pair.waitUntilOutboxEmpty()
        let isolated = isolatedRounds.sorted()[rounds / 2]
        // Where the time of "queued" goes, in the same run: a process start (what any
        // `scmesh` command pays before it does anything), and the disk's own floor for
        // keeping 10 MiB durably (write, fsync the file and its directory: what the
        // outbox must do before "queued").
        func startTime(_ client: String) throws -> Double {
            try TimedRun.run(client, ["--version"]) * 1000
        }
        var startRounds: [Double] = []
        var otherStartRounds: [Double] = []
        for _ in 0..<rounds {
            startRounds.append(try startTime(scmesh))
            if let otherClient { otherStartRounds.append(try startTime(otherClient)) }
        }
        let starts = startRounds.sorted()[rounds / 2]
        let payload = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        let durable = try (0..<rounds).map { round -> Double in
            let path = root + "/durable-\(round)"
            let start = ContinuousClock.now
            try durableWrite(payload, to: path)
            return Double(size) / 1e6 / TCPBench.seconds(ContinuousClock.now - start)
        }.sorted()[rounds / 2]
        let baseline = (name: "in-process full stack TCP bulk 256 MiB", value: inProcess)
        var otherFigures: [BenchFigure] = []
        if let otherClient {
            let name = URL(fileURLWithPath: otherClient).lastPathComponent
            otherFigures = [
                BenchFigure(
                    name:
                        "--client \(otherClient): scmesh send - 10 MiB, returns once queued (median of 5, in turns with the default)",
                    value: otherQueuedRounds.sorted()[rounds / 2],
                    unit: "MB/s",
                    baseline: baseline
                ),
                BenchFigure(
                    name: "--client \(name) against the default scmesh: returns once queued",
                    value: otherQueuedRounds.sorted()[rounds / 2],
                    unit: "MB/s",
                    baseline: ("the default scmesh, same rounds", queued)
                ),
                BenchFigure(
                    name:
                        "--client \(otherClient): scmesh send - 10 MiB, one at a time (each after the previous was delivered), returns once queued (median of 5)",
                    value: otherIsolatedRounds.sorted()[rounds / 2],
                    unit: "MB/s",
                    baseline: baseline
                ),
                BenchFigure(
                    name: "--client \(name): process start, --version (median of 5)",
                    value: otherStartRounds.sorted()[rounds / 2],
                    unit: "ms",
                    baseline: ("the default scmesh", starts)
                ),
            ]
        }
        return [
            BenchFigure(
                name: "scmesh send - 10 MiB, returns once queued (median of 5)",
                value: queued,
                unit: "MB/s",
                baseline: baseline
            ),
            BenchFigure(
                name:
                    "scmesh send - 10 MiB, one at a time (each after the previous was delivered), returns once queued (median of 5)",
                value: isolated,
                unit: "MB/s",
                baseline: baseline
            ),
            BenchFigure(
                name: "scmesh send --wait - 10 MiB, returns on the receipt (median of 5)",
                value: delivered,
                unit: "MB/s",
                baseline: baseline
            ),
            BenchFigure(
                name: "the disk's floor: write + fsync 10 MiB to a new file and fsync its directory (median of 5)",
                value: durable,
                unit: "MB/s",
                baseline: baseline
            ),
            BenchFigure(
                name: "scmesh send - 10 MiB, returns once queued, against the disk's floor",
                value: queued,
                unit: "MB/s",
                baseline: ("durable 10 MiB file write", durable)
            ),
            BenchFigure(
                name: "process start: scmesh --version (median of 5)",
                value: starts,
                unit: "ms",
                baseline: nil
            ),
        ] + otherFigures
    }

    /// Writes `bytes` to a new file and syncs it and its directory (what the outbox does
    /// with a large payload before a send is "queued").
    static func durableWrite(_ bytes: [UInt8], to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else { throw MeshError(.invalidArgument, "cannot create \(path)") }
        defer { close(descriptor) }
        var written = 0
        try bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                guard count > 0 else { throw MeshError(.invalidArgument, "cannot write \(path)") }
                written += count
            }
        }
        guard fsync(descriptor) == 0 else { throw MeshError(.invalidArgument, "cannot fsync \(path)") }
        let directory = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY)
        guard directory >= 0 else { throw MeshError(.invalidArgument, "cannot open the directory of \(path)") }
        defer { close(directory) }
        guard fsync(directory) == 0 else { throw MeshError(.invalidArgument, "cannot fsync the directory of \(path)") }
    }

    static func run() async throws -> [BenchFigure] {
        guard FileManager.default.isExecutableFile(atPath: scmesh) else {
            throw MeshError(
                .invalidArgument,
                "no scmesh next to MeshBench (\(scmesh)); build it: swift build -c release"
            )
        }
        let root = "/tmp/scmesh-bench-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let pair = try await NodePair.start(root: root, port: 20_000 + Int(getpid() % 20_000))
        defer { pair.stop() }
        let (a, peerB) = (pair.a, pair.peerB)
        let count = 200
        let status = timed(count) { _ = try? TimedRun.run(scmesh, ["status", "--data-dir", a]) }
        let send = try timed(count) {
            try TimedRun.run(scmesh, ["send", "--data-dir", a, peerB, "hello from the shell"])
        }
        let waited = try timed(count / 2) {
            try TimedRun.run(scmesh, ["send", "--data-dir", a, "--wait", peerB, "hello, with receipt"])
        }
        return [
            BenchFigure(
                name: "scmesh send from the shell (one process per message, returns once queued)",
                value: send,
                unit: "msgs/s",
                baseline: ("scmesh status, one process per request", status)
            ),
            BenchFigure(
                name: "scmesh send --wait from the shell (returns on the delivery receipt)",
                value: waited,
                unit: "msgs/s",
                baseline: ("scmesh status, one process per request", status)
            ),
        ]
    }

    /// Two release nodes in `root/a` and `root/b` over TCP on loopback (ports `port` and
    /// `port + 1`, B bootstrapped to A; the other transports off), once A lists B.
    struct NodePair {
        let a: String
        let b: String
        var peerB: String
        let processes: [Process]

        static func start(root: String, port: Int, extra: [String] = []) async throws -> NodePair {
            let (a, b) = (root + "/a", root + "/b")
            let only =
                [
                    "--set", "transports.mdns.enabled=false", "--set", "transports.ble.enabled=false",
                    "--set", "transports.loopback.enabled=false", "--set", "node.log_level=error",
                ] + extra
            let nodeA = try launch(["run", "--data-dir", a, "--set", "transports.tcp.listen=127.0.0.1:\(port)"] + only)
            let nodeB = try launch(
                [
                    "run", "--data-dir", b, "--set", "transports.tcp.listen=127.0.0.1:\(port + 1)",
                    "--set", "transports.tcp.bootstrap=127.0.0.1:\(port)",
                ] + only
            )
            var pair = NodePair(a: a, b: b, peerB: "", processes: [nodeA, nodeB])
            do {
                pair.peerB = try output(["identity", "--data-dir", b])
                for _ in 0..<3000 {
                    if (try? output(["peers", "--full", "--data-dir", a]))?.contains(pair.peerB) == true { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
            } catch {
                pair.stop()
                throw error
            }
            return pair
        }

        /// Waits until node a's outbox is empty: every message it queued was delivered
        /// (polled with `scmesh status --json` every 10 ms, at most 60 s).
        func waitUntilOutboxEmpty() async throws {
            for _ in 0..<6000 {
                // The reply's field, not its text: key order and spacing are the encoder's.
                if let reply = try? output(["status", "--data-dir", a, "--json"]),
                    let object = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any],
                    object["outbox_count"] as? Int == 0
                {
                    return
                }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw MeshError(.timedOut, "node a's outbox did not empty within 60 s")
        }

        /// Stops both nodes (SIGTERM) and waits for them.
        func stop() {
            for node in processes where node.isRunning {
                kill(node.processIdentifier, SIGTERM)
                node.waitUntilExit()
            }
        }
    }
}
