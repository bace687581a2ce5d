import Foundation
import MeshCore

/// The idle cost of a node: its CPU time and wake-ups (context switches) a second with
/// two peers linked to it and nothing to send, under each power profile pinned with
/// `scmesh power --profile`, against the same node with no peers in the same run.
///
/// Every node is a real `scmesh run` process over TCP on 127.0.0.1 (mDNS, BLE and the
/// loopback transport off) with a temporary data directory and HOME. Nothing talks to
/// the measured node during a window: the figures are its own timers and its links'.
enum IdleBench {
    /// The power profiles measured, from most to least generous.
    static let profiles = ["maximum", "high", "standard", "reduced", "minimal"]

    /// What the kernel counts for a process: CPU time (user + system) in clock ticks,
    /// the scheduler's run time in nanoseconds and context switches (voluntary +
    /// involuntary), the last two summed over all its threads.
    struct Sample {
        var ticks: Int
        /// Per thread ID: the scheduler's run time in nanoseconds and the context switches.
        var threads: [String: (runNanoseconds: Int, switches: Int)]
        var at: ContinuousClock.Instant

        /// Reads `/proc/PID/stat` (utime, stime), `/proc/PID/task/*/schedstat` (run
        /// time: clock ticks are 10 ms, too coarse for a short window of a mostly idle
        /// process) and `/proc/PID/task/*/status`, per thread: the runtime's worker
        /// threads come and go, so a window counts what each thread did while it was
        /// seen (``since(_:)``).
        static func of(_ pid: pid_t) throws -> Sample {
            let at = ContinuousClock.now
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            // The fields after the command's closing parenthesis start at field 3 (state);
            // utime and stime are fields 14 and 15.
            guard let close = stat.lastIndex(of: ")") else {
                throw MeshError(.invalidArgument, "/proc/\(pid)/stat has no command field: \(stat)")
            }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else {
                throw MeshError(.invalidArgument, "/proc/\(pid)/stat has no utime and stime: \(stat)")
            }
            var threads: [String: (runNanoseconds: Int, switches: Int)] = [:]
            let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
            for task in tasks {
                // A thread may end between the listing and the reads; it is skipped.
                guard
                    let schedstat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                    let runNanoseconds = schedstat.split(separator: " ").first.flatMap({ Int($0) }),
                    let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
                else { continue }
                var switches = 0
                for line in status.split(separator: "\n")
                where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    switches += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
                threads[task] = (runNanoseconds, switches)
            }
            return Sample(ticks: user + system, threads: threads, at: at)
        }

        /// Run time and switches since `before`: a thread seen in both counts its
        /// growth, a thread started since counts all of its own; a thread that ended
        /// in between is lost (so the figures are lower bounds).
        func since(_ before: Sample) -> (runNanoseconds: Int, switches: Int) {
            threads.reduce(into: (0, 0)) { total, entry in
                let earlier = before.threads[entry.key] ?? (0, 0)
                total.0 += entry.value.runNanoseconds - earlier.runNanoseconds
                total.1 += entry.value.switches - earlier.switches
            }
        }
    }

    /// A window's rates: CPU milliseconds a second (from clock ticks and from the
    /// scheduler's run time) and wake-ups a second.
    struct Rates {
        var cpuMsPerSecond: Double
        var runMsPerSecond: Double
        var wakeupsPerSecond: Double
    }

    /// Sleeps `seconds` without touching the node and returns its rates over that time.
    static func measure(_ pid: pid_t, seconds: Int) async throws -> Rates {
        let before = try Sample.of(pid)
        try await Task.sleep(for: .seconds(seconds))
        let after = try Sample.of(pid)
        let elapsed = TCPBench.seconds(after.at - before.at)
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let threads = after.since(before)
        return Rates(
            cpuMsPerSecond: Double(after.ticks - before.ticks) * 1000 / ticksPerSecond / elapsed,
            runMsPerSecond: Double(threads.runNanoseconds) / 1e6 / elapsed,
            wakeupsPerSecond: Double(threads.switches) / elapsed
        )
    }

    /// Parses `--seconds N` (default 60) and runs the benchmark.
    static func run(arguments: [String]) async throws -> [BenchFigure] {
        var seconds = 60
        if arguments.count == 2, arguments[0] == "--seconds", let value = Int(arguments[1]), value > 0 {
            seconds = value
        } else if !arguments.isEmpty {
            throw MeshError(.invalidArgument, "usage: MeshBench idle [--seconds N] (N > 0; default 60)")
        }
        return try await run(seconds: seconds)
    }

    /// The baseline window (one node, no peers, profile maximum), then one window a
    /// profile on a node with two peers, each after a settling pause.
    static func run(seconds: Int) async throws -> [BenchFigure] {
        let scmesh = CLIBench.scmesh
        guard FileManager.default.isExecutableFile(atPath: scmesh) else {
            throw MeshError(.invalidArgument, "no scmesh next to MeshBench (\(scmesh)); build it: swift build")
        }
        let root = "/tmp/scmesh-idle-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/home", withIntermediateDirectories: true)
        // The nodes and commands are children of this process and take its HOME.
        setenv("HOME", root + "/home", 1)
        let port = 30_000 + Int(getpid() % 20_000)
        let settle = 3

        // Baseline: the node alone. With no links, a profile's pacing (BLE, which is
        // off, and the links' keepalive) has nothing to act on, so one window serves all.
        let alone = root + "/alone"
        let baselineNode = try node(dataDir: alone, port: port + 3)
        let baseline: Rates
        do {
            try await waitUntilAnswering(alone)
            try TimedRun.run(scmesh, ["power", "--profile", "maximum", "--data-dir", alone])
            try await Task.sleep(for: .seconds(settle))
            baseline = try await measure(baselineNode.processIdentifier, seconds: seconds)
        } catch {
            stop([baselineNode])
            throw error
        }
        stop([baselineNode])

        let measured = root + "/node"
        let nodes = [
            try node(dataDir: measured, port: port),
            try node(dataDir: root + "/peer1", port: port + 1, bootstrap: port),
            try node(dataDir: root + "/peer2", port: port + 2, bootstrap: port),
        ]
        defer { stop(nodes) }
        try await waitUntilAnswering(measured)
        let peers = try [root + "/peer1", root + "/peer2"].map {
            try CLIBench.output(["identity", "--data-dir", $0])
        }
        try await waitUntilListed(peers, by: measured)

        let window = "\(seconds) s window"
        var figures: [BenchFigure] = []
        // Maximum once more at the end: a control for what the order and the node's
        // age do to the figures, apart from the profile.
        for (index, profile) in (profiles + ["maximum"]).enumerated() {
            let label = index == profiles.count ? "\(profile), again after the others" : profile
            try TimedRun.run(scmesh, ["power", "--profile", profile, "--data-dir", measured])
            try await Task.sleep(for: .seconds(settle))
            let rates = try await measure(nodes[0].processIdentifier, seconds: seconds)
            figures += [
                BenchFigure(
                    name: "idle node, two peers, profile \(label): CPU (\(window))",
                    value: rates.cpuMsPerSecond,
                    unit: "ms/s",
                    baseline: ("the node with no peers", baseline.cpuMsPerSecond)
                ),
                BenchFigure(
                    name: "idle node, two peers, profile \(label): CPU, scheduler run time (\(window))",
                    value: rates.runMsPerSecond,
                    unit: "ms/s",
                    baseline: ("the node with no peers", baseline.runMsPerSecond)
                ),
                BenchFigure(
                    name: "idle node, two peers, profile \(label): wake-ups (\(window))",
                    value: rates.wakeupsPerSecond,
                    unit: "/s",
                    baseline: ("the node with no peers", baseline.wakeupsPerSecond)
                ),
            ]
        }
        // Still linked after the last window, or the figures measured a node alone.
        try await waitUntilListed(peers, by: measured)
        return [
            BenchFigure(
                name: "idle node, no peers, profile maximum: CPU (\(window))",
                value: baseline.cpuMsPerSecond,
                unit: "ms/s",
                baseline: nil
            ),
            BenchFigure(
                name: "idle node, no peers, profile maximum: CPU, scheduler run time (\(window))",
                value: baseline.runMsPerSecond,
                unit: "ms/s",
                baseline: nil
            ),
            BenchFigure(
                name: "idle node, no peers, profile maximum: wake-ups (\(window))",
                value: baseline.wakeupsPerSecond,
                unit: "/s",
                baseline: nil
            ),
        ] + figures
    }

    /// Starts `scmesh run` on `127.0.0.1:port`, bootstrapped to `bootstrap` when given,
    /// with the other transports off.
    static func node(dataDir: String, port: Int, bootstrap: Int? = nil) throws -> Process {
        var arguments = [
            "run", "--data-dir", dataDir, "--set", "transports.tcp.listen=127.0.0.1:\(port)",
            "--set", "transports.mdns.enabled=false", "--set", "transports.ble.enabled=false",
            "--set", "transports.loopback.enabled=false", "--set", "node.log_level=error",
        ]
        if let bootstrap { arguments += ["--set", "transports.tcp.bootstrap=127.0.0.1:\(bootstrap)"] }
        return try CLIBench.launch(arguments)
    }

    /// Polls `scmesh status` every 50 ms until the node answers, at most 30 s.
    static func waitUntilAnswering(_ dataDir: String) async throws {
        for _ in 0..<600 {
            if (try? TimedRun.run(CLIBench.scmesh, ["status", "--data-dir", dataDir])) != nil { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw MeshError(.timedOut, "the node in \(dataDir) did not answer scmesh status within 30 s")
    }

    /// Polls `scmesh peers` every 50 ms until it lists every one of `peers`, at most 30 s.
    static func waitUntilListed(_ peers: [String], by dataDir: String) async throws {
        for _ in 0..<600 {
            let listed = (try? CLIBench.output(["peers", "--full", "--data-dir", dataDir])) ?? ""
            if peers.allSatisfy({ listed.contains($0) }) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw MeshError(.timedOut, "the node in \(dataDir) did not list its two peers within 30 s")
    }

    /// Stops the nodes (SIGTERM) and waits for them.
    static func stop(_ nodes: [Process]) {
        for node in nodes where node.isRunning {
            kill(node.processIdentifier, SIGTERM)
            node.waitUntilExit()
        }
    }
}
