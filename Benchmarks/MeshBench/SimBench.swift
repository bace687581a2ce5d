import Foundation
import MeshCore
import MeshSimulator
import Synchronization

/// `MeshBench sim`: the mesh simulator (Benchmarks/MeshSimulator) on 200 and 1000
/// nodes, or on `--nodes N`. Prints, per run, one block: delivery, transmissions
/// against the shortest-path optimum, the control share and memory per node.
enum SimBench {
    static let usage = """
        usage: MeshBench sim [--nodes N] [--seed S] [--loss L] [--messages M] [--flood] [--topics-only]
                             [--converge S] [--settle S] [--refresh S[,U]] [--mix LIST]
                             [--liars N[,LIE]] [--verbose]
          --nodes N        one run of N nodes (default: a run of 200, then one of 1000)
          --seed S         seeds the graph, the traffic, the disturbances and the loss (default 1)
          --loss L         loss per frame on every link, 0..<1 (default 0.1)
          --messages M     messages between random pairs (default 2000)
          --flood          the flooding fallback on (flood.enabled, as Config/node.yaml has it)
          --topics-only    only the topic phase (no routed traffic, partition or churn)
          --converge S     the longest wait for routes to settle, virtual seconds (default 600)
          --settle S       the longest wait for undelivered messages after the steady phase
                           and at the end, virtual seconds (default 300)
          --refresh S[,U]  routing.announce_interval_ms in seconds (default 3600; routes live
                           10/3 of it, as by default), and U routing.summary_interval_ms in
                           seconds (default 60; 0: none)
          --mix LIST       the nodes' protocol features, round robin by node index: a comma-
                           separated list of full, minimal and gateway (routing only)
          --liars N[,LIE]  the N best-connected nodes lie about the hop count of every route
                           they announce: shorter (1 hop, the default), longer (3 more) or
                           flapping (each in turn); they send and receive no messages
          --verbose        progress lines and diagnostics (wire by frame and phase, router
                           counters, undelivered messages explained)
        """

    /// Parses the options in ``usage`` (after `sim`).
    static func run(arguments: [String]) async throws {
        var nodes: [Int] = [200, 1000]
        var seed: UInt64 = 1
        var loss = 0.1
        var messages = 2000
        var verbose = false
        var flood = false
        var topicsOnly = false
        var mix: [Capabilities] = []
        var converge: Duration?
        var settle: Duration?
        var refresh: Int?
        var summary: Int?
        var liars = 0
        var lie = SimulationConfiguration.HopLie.shorter
        var index = 0
        func value(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw MeshError(.invalidArgument, "\(flag) needs a value") }
            return arguments[index]
        }
        func seconds(_ flag: String, atLeast least: Int) throws -> Int {
            let text = try value(flag)
            guard let number = Int(text), number >= least else {
                throw MeshError(.invalidArgument, "\(flag): whole virtual seconds ≥ \(least), got \(text)")
            }
            return number
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--nodes":
                let text = try value(flag)
                guard let count = Int(text), count >= 2 else {
                    throw MeshError(.invalidArgument, "--nodes: a number ≥ 2, got \(text)")
                }
                nodes = [count]
            case "--seed":
                let text = try value(flag)
                guard let number = UInt64(text) else {
                    throw MeshError(.invalidArgument, "--seed: a whole number, got \(text)")
                }
                seed = number
            case "--loss":
                let text = try value(flag)
                guard let number = Double(text), (0..<1).contains(number) else {
                    throw MeshError(.invalidArgument, "--loss: a fraction in 0..<1 (0.1 = 10 %), got \(text)")
                }
                loss = number
            case "--messages":
                let text = try value(flag)
                guard let number = Int(text), number >= 1 else {
                    throw MeshError(.invalidArgument, "--messages: a number ≥ 1, got \(text)")
                }
                messages = number
            case "--converge": converge = .seconds(try seconds(flag, atLeast: 1))
            case "--settle": settle = .seconds(try seconds(flag, atLeast: 1))
            case "--refresh":
                let parts = try value(flag).split(separator: ",", omittingEmptySubsequences: false)
                guard (1...2).contains(parts.count), let number = Int(parts[0]), number >= 1,
                    parts.count == 1 || Int(parts[1]).map({ $0 >= 0 }) == true
                else {
                    throw MeshError(.invalidArgument, "--refresh: seconds ≥ 1, then optionally ,seconds ≥ 0 (60,30)")
                }
                refresh = number
                if parts.count == 2 { summary = Int(parts[1]) }
            case "--liars":
                let parts = try value(flag).split(separator: ",")
                guard (1...2).contains(parts.count), let count = Int(parts[0]), count >= 0 else {
                    throw MeshError(.invalidArgument, "--liars: a count ≥ 0, then optionally ,shorter|longer|flapping")
                }
                liars = count
                if parts.count == 2 {
                    switch parts[1] {
                    case "shorter": lie = .shorter
                    case "longer": lie = .longer
                    case "flapping": lie = .flapping
                    default:
                        throw MeshError(
                            .invalidArgument,
                            "--liars: the lie is shorter, longer or flapping, got \(parts[1])"
                        )
                    }
                }
            case "--mix": mix = try featureMix(try value(flag))
            case "--verbose": verbose = true
            case "--flood": flood = true
            case "--topics-only": topicsOnly = true
            case "--help", "-h":
                print(usage)
                return
            default:
                throw MeshError(.invalidArgument, "unknown option \(flag); \(usage)")
            }
            index += 1
        }
        for count in nodes {
            var configuration = SimulationConfiguration(nodes: count, seed: seed, loss: loss, messages: messages)
            configuration.router.flood.enabled = flood
            if let refresh {
                configuration.router.routing.announceInterval = .seconds(refresh)
                configuration.router.routing.routeMaxAge = .seconds(refresh * 10 / 3)
            }
            if let summary { configuration.router.routing.summaryInterval = .seconds(summary) }
            configuration.featureMix = mix
            configuration.liars = liars
            configuration.lie = lie
            // A topic-only run needs no routes across the mesh: the gossip uses none.
            configuration.routesAcrossMesh = !topicsOnly
            if let converge { configuration.convergenceLimit = converge }
            if let settle { configuration.settleLimit = settle }
            try await runOne(configuration, verbose: verbose, topicsOnly: topicsOnly)
        }
    }

    /// Runs one simulation and prints its report block: a header, then one line per
    /// figure, each starting with `N nodes:` (stable labels for scripts), diagnostics
    /// after them with `verbose`.
    static func runOne(_ configuration: SimulationConfiguration, verbose: Bool, topicsOnly: Bool = false) async throws {
        let realStart = ContinuousClock.now
        let rssBefore = residentBytes()
        let simulation = try MeshSimulation(configuration: configuration) { line in
            if verbose { print("  [\(elapsed(since: realStart))] \(line)") }
        }
        let converged = Mutex<Int?>(nil)
        if topicsOnly { return printTopics(await simulation.runTopicsOnly(), configuration, verbose: verbose) }
        let report = await simulation.run { converged.withLock { $0 = residentBytes() } }
        let rssConverged = converged.withLock { $0 } ?? 0
        let rssAfter = residentBytes()
        let n = report.nodes
        let label = "\(n) nodes:"
        print(
            "== sim \(n) nodes, seed \(configuration.seed), loss \(fmt(configuration.loss * 100)) %, flooding \(configuration.router.flood.enabled ? "on" : "off"), "
                + "\(report.edges) links, diameter \(report.diameter), max_hops \(report.maxHops)"
                + (configuration.liars > 0 ? ", \(configuration.liars) liars (\(configuration.lie))" : "")
        )
        print(
            "\(label) delivery \(fmt(report.deliveryPercent)) % (\(report.delivered) of \(report.sent) with a signed receipt; "
                + "arrived \(report.arrived), held \(report.held), lost \(report.lost), duplicates \(report.duplicates + report.duplicatesAfterRestart))"
        )
        let optimal =
            report.steadyDelivered == 0 ? 0 : Double(report.steadyOptimalHops) / Double(report.steadyDelivered)
        let perMessage =
            report.steadyDelivered == 0 ? 0 : Double(report.steadyMessagePackets) / Double(report.steadyDelivered)
        print(
            "\(label) \(fmt(report.timesOptimal)) x optimal (steady phase: \(fmt(perMessage)) DATA frames per delivered message "
                + "| shortest path \(fmt(optimal)) hops; loss alone 1/(1−loss) = \(fmt(1 / (1 - configuration.loss))) x)"
        )
        print(
            "\(label) control after convergence \(fmt(report.runningControlPercent)) % "
                + "(whole run \(fmt(report.controlPercent)) %; routing bytes / all bytes on links)"
        )
        print(
            "\(label) routes settled after \(seconds(report.settled)) virtual (\(report.settledKnown) of \(report.routesPossible) known, "
                + "stretch \(fmt(report.settledStretch)) x the shortest paths)"
        )
        print(
            "\(label) memory \(fmt(Double(rssConverged - rssBefore) / Double(n) / 1024)) KiB per node once routes settled, "
                + "\(fmt(Double(rssAfter - rssBefore) / Double(n) / 1024)) KiB at the end (RSS delta / nodes)"
        )
        if report.topicPublished > 0 {
            print(
                "\(label) topics delivery \(fmt(report.topicDeliveryPercent)) % (\(report.topicDelivered) of \(report.topicExpected) subscriber × message pairs)"
            )
        }
        print("\(label) time \(seconds(report.virtualTime)) virtual in \(seconds(report.realTime)) real")
        guard verbose else { return }
        printDiagnostics(report, configuration)
    }

    /// The diagnostics of a run (`--verbose`).
    static func printDiagnostics(_ report: SimulationReport, _ configuration: SimulationConfiguration) {
        let n = report.nodes
        print(
            "graph: \(n) nodes, \(report.edges) links, mean degree \(fmt(report.meanDegree)), diameter \(report.diameter) hops, "
                + "\(report.bridges) links added to connect it; max_hops \(report.maxHops), message TTL \(report.messageTTL); "
                + mixDescription(configuration.featureMix)
                + "limits: convergence \(configuration.convergenceLimit), settling \(configuration.settleLimit)"
        )
        print(
            "routes: \(report.routesKnown) of \(report.routesPossible) known after \(report.convergence) (virtual), "
                + "stretch \(fmt(report.routeStretch)); settled after \(report.settled): "
                + "\(report.settledStretched) routes longer than the shortest path, "
                + "\(report.settledShortcuts) of them 2+ hops longer than a neighbour's of the same sequence; "
                + "\(report.settledChanges) routes changed in the last 10 s; quiet mark after \(report.quiet ?? report.settled)"
        )
        print(
            "traffic: \(report.sent) messages between random pairs (\(report.payloadBytes) payload bytes), "
                + "\(report.partitioned) nodes partitioned for \(configuration.partitionDuration), "
                + "\(report.churned) restarted after \(configuration.churnDowntime) down; receipts \(report.steadyReceiptPackets) packets in the steady phase"
        )
        let virtualSeconds = Double(report.virtualTime.components.seconds)
        let announceBits = Double(report.wire.bytes(WireTally.Kind.announce) * 8)
        let announcePerLink: Double = announceBits / Double(max(1, 2 * report.edges)) / max(1, virtualSeconds)
        print(
            "control: from the quiet mark \(fmt(report.sinceQuietControlPercent)) %, from the 99.5 % mark \(fmt(report.sinceKnownControlPercent)) %, "
                + "steady phase \(fmt(report.steadyControlPercent)) %; announcements \(fmt(announcePerLink)) bit/s per link direction "
                + "(\(configuration.linkBitrate / 1000) kbit/s links)"
        )
        if report.topicPublished > 0 { printTopicFigures(report) }
        let wire = report.wire
        var parts: [String] = []
        for kind in WireTally.Kind.allCases {
            parts.append("\(kind) \(wire.bytes(kind)) B / \(wire.packets(kind)) pkts")
        }
        print("wire: \(wire.totalBytes) bytes; \(parts.joined(separator: ", ")); dropped \(wire.dropped) pkts")
        print("control by phase (routing frame bytes / all bytes): \(phases(report).joined(separator: "; "))")
        let stats = report.stats
        print(
            "routers: ack timeouts \(stats.ackTimeouts), delivery retries \(stats.deliveryRetries), duplicates dropped \(stats.duplicatesDropped), "
                + "relayed \(stats.messagesRelayed), announcements sent \(stats.announcesSent) accepted \(stats.announcesAccepted) ignored \(stats.announcesIgnored) "
                + "suppressed \(stats.announcesSuppressed) shortcuts \(stats.shortcutsOffered) "
                + "rejected [\(counts(stats.announcesRejected))], route requests [\(counts(stats.routeRequests))], summaries [\(counts(stats.routeSummaries))], "
                + "relay refused [\(counts(stats.relayRefused))]"
        )
        print("time: \(report.forcedAdvances) forced clock advances")
        for line in report.undelivered { print("undelivered: \(line)") }
        for line in report.busiestSequences { print("busiest sequences, \(line)") }
    }

    /// Each phase's routing share, split by routing frame.
    static func phases(_ report: SimulationReport) -> [String] {
        [
            ("whole run", report.wire), ("from the 99.5 % mark", report.sinceKnownWire),
            ("from the quiet mark", report.sinceQuietWire),
            ("after convergence", report.runningWire), ("steady", report.steadyWire),
            ("partition", report.partitionWire), ("churn", report.churnWire),
        ].map { name, wire in
            let total = max(1, wire.totalBytes)
            let split = WireTally.RoutingFrame.allCases.map {
                "\($0) \(fmt(Double(wire.routing($0)) * 100 / Double(total)))"
            }
            let line =
                "\(name) \(fmt(Double(wire.bytes(.announce)) * 100 / Double(total))) % [\(split.joined(separator: ", "))] of \(wire.totalBytes) B"
            // The census counts "new" against the phase a sequence first crossed a link
            // in: meaningful for one phase, not for spans of several.
            guard ["steady", "partition", "churn"].contains(name) else { return line }
            return line
                + "; ANNOUNCE frames of sequences new in the phase \(wire.announcesOfNewSequences) (\(wire.sequencesFirstSent) sequences), "
                + "of older sequences \(wire.announcesOfOldSequences), with the solicited flag \(wire.solicitedAnnounces)"
        }
    }

    static func counts(_ values: [String: Int]) -> String {
        values.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    static func fmt(_ value: Double) -> String { BenchFigure.format(value) }

    /// A duration in whole seconds ("362 s").
    static func seconds(_ duration: Duration) -> String { "\(duration.components.seconds) s" }

    static func elapsed(since start: ContinuousClock.Instant) -> String {
        let seconds =
            Double((ContinuousClock.now - start).components.attoseconds) / 1e18
            + Double((ContinuousClock.now - start).components.seconds)
        return String(format: "%.1fs", seconds)
    }

    /// VmRSS from /proc/self/status, in bytes.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kb * 1024
        }
        return 0
    }
}
