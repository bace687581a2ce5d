import Foundation
import MeshCore
import MeshTesting
import Synchronization

/// `MeshBench sim`: the mesh simulator (`MeshTesting/Simulation`) on 200 and 1000
/// nodes, or on `--nodes N`. Prints, per run, the node count, delivery, transmissions
/// against the shortest-path optimum, the control share and memory per node.
enum SimBench {
    static let usage = """
        usage: MeshBench sim [--nodes N] [--seed S] [--loss L] [--messages M] [--flood]
                             [--converge S] [--settle S] [--ttl N] [--refresh S] [--summary S]
                             [--no-solicited] [--new-sequence-on-restart] [--full-summaries]
                             [--ask-everyone] [--forget-routes-on-restart] [--first-answer-only]
                             [--no-shortcuts] [--no-flood-hold] [--always-ask] [--any-route-requests]
                             [--answers-spread] [--full-link-up-summaries]
                             [--at-known-mark] [--mix LIST] [--quiet]
          --nodes N     one run of N nodes (default: a run of 200, then one of 1000)
          --seed S      seeds the graph, the traffic, the disturbances and the loss (default 1)
          --loss L      loss per frame (all its packets) on every link, 0..<1 (default 0.1)
          --messages M  messages between random pairs (default 2000)
          --flood       the flooding fallback on (flood.enabled, as Config/node.yaml has it;
                        its TTL raised like max_hops), else off (the library default)
          --topics-only only the topic phase (no routed traffic, partition or churn), with
                        every missed subscriber × message pair explained
          --topics-full-routes
                        with --topics-only: route announcements span the graph as in the
                        full run (else they reach direct neighbours only, max_hops 1: the
                        gossip uses no routes, and at 1000 nodes routes are most of the work)
          --topics-legacy
                        the topic gossip as it was before the loss fixes (topics.ttl 16, IHAVE
                        only outside the mesh, IWANT timeout 3 s, announcements sent once),
                        for before/after figures from one build
          --mesh-degree D
                        the topic mesh degree (topics.mesh_degree; default 6 as the library
                        has it; D_low = min(4, D), D_high = max(12, 2 D) as the node sets them)
          --lazy-degree N
                        neighbours outside the mesh that get IHAVE each heartbeat (D_lazy,
                        default 6)
          --no-ihave-to-mesh
                        IHAVE only outside the mesh (gossipsub's rule), else to mesh peers too
          --converge S  the longest wait for routes to converge (99.5 % known, then settled:
                        in every look, 10 s apart, over a route summary interval and 10 s
                        more, ≤ 0.1 % of the routes appeared, went, or changed next hop or
                        hops), virtual seconds (default 600)
          --settle S    the longest wait for undelivered messages after the steady
                        phase and at the end, virtual seconds (default 300); the scenario
                        is the same, a run that keeps
                        a few messages in custody ends sooner (at 1000 nodes a virtual
                        second costs many real ones)
          --ttl N       the TTL a direct message starts with (default_ttl), when above
                        3 × (the graph's diameter + 4), what the run raises it to otherwise
          --refresh S   routing.announce_interval_ms in virtual seconds (default 3600; the
                        route maximum age is 10/3 of it, as by default)
          --summary S   routing.summary_interval_ms in virtual seconds (default 60; 0: no
                        route summaries)
          --no-solicited
                        new sequences announced for route requests cross the whole mesh, as
                        before the ANNOUNCE solicited flag (routing.solicitedAnswers off), for
                        same-build comparisons; else they go back toward the requesters
          --new-sequence-on-restart
                        a restarted node announces a new sequence (no announcement state
                        kept across its restart, as a router without an AnnounceStateStore),
                        for same-build comparisons; else it repeats the one the mesh holds
          --full-summaries
                        the periodic route summaries carry a hash per bucket, as before
                        digests (routing.digestSummaries off), for same-build comparisons;
                        else they are one hash of the whole table
          --ask-everyone
                        every ask of a route request goes to every neighbour, as before
                        (routing.focusedAsks off), for same-build comparisons; else to one
                        neighbour that advertises the target, where one does
          --forget-routes-on-restart
                        a restarted router starts with an empty route table (none kept
                        across its restart, as a router without a RouteTableStore), for
                        same-build comparisons; else with the routes it had, dormant
          --first-answer-only
                        a relay passes a route request's answer back to each requester once,
                        the first copy it takes, as before (routing.shorterAnswers off), for
                        same-build comparisons; else a later copy of the same sequence by a
                        shorter way too
          --no-shortcuts
                        a node ignores a neighbour's announcement of the sequence it routes by
                        at more hops than its own route + 1, as before (routing.shortcuts
                        off), for same-build comparisons; else it sends the neighbour its route
          --no-flood-hold
                        a node floods a route request for the same target and sequence every
                        2 s, as before (routing.floodHold off), for same-build comparisons;
                        else at most every 16 s
          --always-ask  a node asks for a route from every flood copy that finds none, and
                        goes on asking whatever became of the message, as before
                        (routing.asksFollowMessages off), for same-build comparisons; else
                        only while a message for the destination waits in its queue
          --any-route-requests
                        a route request is answered with any route and goes on along any
                        route to its target, as before (routing.requestsWithinHopLimit off),
                        for same-build comparisons; else answered only with a route that
                        reaches the asker within max_hops, and sent along a route only when
                        it is shorter than the request's remaining hop limit (flooded
                        otherwise)
          --answers-spread
                        a relay's answer to a route request carries the solicited flag only
                        when its sequence is above the relay's summarised one, as before
                        (routing.answersToRequesters off), for same-build comparisons; else
                        always, so the answer goes back toward the requesters only
          --full-link-up-summaries
                        the summary sent when a link comes up has a hash per bucket, as before
                        (routing.linkUpDigests off), for same-build comparisons; else it is a
                        digest, like the periodic ones
          --no-hop-counts
                        a neighbour whose route summary matches gets no hop counts, as before
                        (routing.hopCounts off), for same-build comparisons; else it gets
                        them at its first two matching summaries, and answers with its
                        shorter routes
          --at-known-mark
                        the steady phase starts once 99.5 % of the routes are known, as before,
                        without waiting for them to settle
          --mix LIST    the nodes' protocol features, round robin by node index, from a
                        comma-separated list of full, minimal (no optional feature) and
                        gateway (routing, route_sync and flooding only); e.g. full,minimal,gateway
          --quiet       no progress lines
        """

    /// Parses the options in ``usage`` (after `sim`).
    static func run(arguments: [String]) async throws {
        var nodes: [Int] = [200, 1000]
        var keepAnnounceState = true
        var seed: UInt64 = 1
        var loss = 0.1
        var messages: Int?
        var verbose = true
        var flood = false
        var topicsOnly = false
        var topicsLegacy = false
        var topicsFullRoutes = false
        var meshDegree: Int?
        var lazyDegree: Int?
        var ihaveToMesh = true
        var converge: Duration?
        var settle: Duration?
        var ttl: UInt8?
        var refresh: Int?
        var summary: Int?
        var keepRouteTable = true
        var waitForSettledRoutes = true
        var mix: [Capabilities] = []
        // Each turns one routing rule off (the rule as before it), for same-build
        // comparisons; the usage text above says what each does.
        let routingRuleSwitches: [String: WritableKeyPath<RoutingConfiguration, Bool>] = [
            "--no-solicited": \.solicitedAnswers, "--full-summaries": \.digestSummaries, "--ask-everyone": \.focusedAsks,
            "--first-answer-only": \.shorterAnswers, "--no-shortcuts": \.shortcuts, "--no-flood-hold": \.floodHold,
            "--always-ask": \.asksFollowMessages, "--any-route-requests": \.requestsWithinHopLimit,
            "--answers-spread": \.answersToRequesters, "--full-link-up-summaries": \.linkUpDigests,
            "--no-hop-counts": \.hopCounts,
        ]
        var rulesOff: [WritableKeyPath<RoutingConfiguration, Bool>] = []
        var index = 0
        func value(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw MeshError(.invalidArgument, "\(flag) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let flag = arguments[index]
            if let rule = routingRuleSwitches[flag] {
                rulesOff.append(rule)
                index += 1
                continue
            }
            switch flag {
            case "--nodes":
                let text = try value(flag)
                guard let count = Int(text), count >= 2 else { throw MeshError(.invalidArgument, "--nodes: a number ≥ 2, got \(text)") }
                nodes = [count]
            case "--seed":
                let text = try value(flag)
                guard let number = UInt64(text) else { throw MeshError(.invalidArgument, "--seed: a whole number, got \(text)") }
                seed = number
            case "--loss":
                let text = try value(flag)
                guard let number = Double(text), (0..<1).contains(number) else {
                    throw MeshError(.invalidArgument, "--loss: a fraction in 0..<1 (0.1 = 10 %), got \(text)")
                }
                loss = number
            case "--messages":
                let text = try value(flag)
                guard let number = Int(text), number >= 1 else { throw MeshError(.invalidArgument, "--messages: a number ≥ 1, got \(text)") }
                messages = number
            case "--converge", "--settle":
                let text = try value(flag)
                guard let number = Int(text), number >= 1 else {
                    throw MeshError(.invalidArgument, "\(flag): whole virtual seconds ≥ 1, got \(text)")
                }
                if flag == "--converge" { converge = .seconds(number) } else { settle = .seconds(number) }
            case "--ttl":
                let text = try value(flag)
                guard let number = UInt8(text), number >= 1 else { throw MeshError(.invalidArgument, "--ttl: hops 1...255, got \(text)") }
                ttl = number
            case "--refresh":
                let text = try value(flag)
                guard let number = Int(text), number >= 1 else { throw MeshError(.invalidArgument, "--refresh: whole virtual seconds ≥ 1, got \(text)") }
                refresh = number
            case "--summary":
                let text = try value(flag)
                guard let number = Int(text), number >= 0 else { throw MeshError(.invalidArgument, "--summary: whole virtual seconds ≥ 0, got \(text)") }
                summary = number
            case "--mix":
                mix = try featureMix(try value(flag))
            case "--quiet":
                verbose = false
            case "--forget-routes-on-restart":
                keepRouteTable = false
            case "--at-known-mark":
                waitForSettledRoutes = false
            case "--new-sequence-on-restart":
                keepAnnounceState = false
            case "--flood":
                flood = true
            case "--topics-only":
                topicsOnly = true
            case "--topics-legacy":
                topicsLegacy = true
            case "--topics-full-routes":
                topicsFullRoutes = true
            case "--mesh-degree", "--lazy-degree":
                let text = try value(flag)
                guard let number = Int(text), (1...64).contains(number) else {
                    throw MeshError(.invalidArgument, "\(flag): a number of neighbours in 1...64, got \(text)")
                }
                if flag == "--mesh-degree" { meshDegree = number } else { lazyDegree = number }
            case "--no-ihave-to-mesh":
                ihaveToMesh = false
            case "--help", "-h":
                print(usage)
                return
            default:
                throw MeshError(.invalidArgument, "unknown option \(flag); \(usage)")
            }
            index += 1
        }
        for count in nodes {
            // Traffic is a sample: all-to-all pairs would be count² messages.
            let sample = messages ?? defaultMessages(nodes: count)
            var configuration = SimulationConfiguration(nodes: count, seed: seed, loss: loss, messages: sample)
            configuration.router.flood.enabled = flood
            if let refresh {
                // Routes live as many refreshes as by default (12,000 s / 3600 s).
                configuration.router.routing.announceInterval = .seconds(refresh)
                configuration.router.routing.routeMaxAge = .seconds(refresh * 10 / 3)
            }
            if let summary { configuration.router.routing.summaryInterval = .seconds(summary) }
            for rule in rulesOff { configuration.router.routing[keyPath: rule] = false }
            configuration.waitForSettledRoutes = waitForSettledRoutes
            configuration.keepAnnounceState = keepAnnounceState
            configuration.keepRouteTable = keepRouteTable
            configuration.featureMix = mix
            if topicsLegacy {
                configuration.topics = TopicConfiguration(gossipToMesh: false, iwantTimeout: .seconds(3), announceRepeats: 0, ttl: 16)
            }
            configuration.routesAcrossMesh = !topicsOnly || topicsFullRoutes
            if let meshDegree {
                configuration.topics.meshDegree = meshDegree
                configuration.topics.meshDegreeLow = min(4, meshDegree)
                configuration.topics.meshDegreeHigh = max(12, 2 * meshDegree)
            }
            if let lazyDegree { configuration.topics.gossipDegree = lazyDegree }
            if !ihaveToMesh { configuration.topics.gossipToMesh = false }
            if let converge { configuration.convergenceLimit = converge }
            if let settle { configuration.settleLimit = settle }
            if let ttl { configuration.router.defaultTTL = ttl }
            try await runOne(configuration, verbose: verbose, topicsOnly: topicsOnly)
        }
    }

    /// The default message sample: 2000 messages (a messenger mix of sizes).
    static func defaultMessages(nodes: Int) -> Int {
        2000
    }

    static func runOne(_ configuration: SimulationConfiguration, verbose: Bool, topicsOnly: Bool = false) async throws {
        let realStart = ContinuousClock.now
        let rssBefore = residentBytes()
        let simulation = try MeshSimulation(configuration: configuration) { line in
            if verbose { print("  [\(elapsed(since: realStart))] \(line)") }
        }
        let converged = Mutex<Int?>(nil)
        if topicsOnly { return printTopics(await simulation.runTopicsOnly(), configuration) }
        let report = await simulation.run { converged.withLock { $0 = residentBytes() } }
        let rssConverged = converged.withLock { $0 } ?? 0
        let rssAfter = residentBytes()
        let n = report.nodes
        print("== mesh simulation: \(n) nodes")
        print(
            "graph: \(n) nodes, \(report.edges) links, mean degree \(fmt(report.meanDegree)), diameter \(report.diameter) hops, "
                + "\(report.bridges) links added to connect it; max_hops \(report.maxHops), message TTL \(report.messageTTL); loss \(fmt(configuration.loss * 100)) % per frame; seed \(configuration.seed); flooding fallback \(configuration.router.flood.enabled ? "on" : "off"); "
                + mixDescription(configuration.featureMix)
                + "limits: convergence \(configuration.convergenceLimit), settling \(configuration.settleLimit)")
        print(
            "routes: \(report.routesKnown) of \(report.routesPossible) known after \(report.convergence) (virtual), "
                + "stretch \(fmt(report.routeStretch)) x the shortest paths; settled after \(report.settled): \(report.settledKnown) known, "
                + "stretch \(fmt(report.settledStretch)), \(report.settledStretched) routes longer than the shortest path, "
                + "\(report.settledShortcuts) of them 2+ hops longer than a neighbour's of the same sequence; "
                + "\(report.settledChanges) routes changed in the last 10 s; quiet mark (Σ hops within 0.1 % in 10 s, the settled mark until 2026-11-28) after \(report.quiet ?? report.settled)")
        print(
            "traffic: \(report.sent) messages between random pairs (a sample of the \(n * (n - 1)) pairs; messenger mix of payload sizes, "
                + "\(report.payloadBytes) bytes in all, mean \(report.sent == 0 ? 0 : report.payloadBytes / report.sent) B), "
                + "\(report.partitioned) nodes partitioned for \(configuration.partitionDuration), \(report.churned) restarted after \(configuration.churnDowntime) down")
        print(
            "\(n) nodes: delivery \(fmt(report.deliveryPercent)) % (\(report.delivered) of \(report.sent) with a signed receipt; "
                + "\(report.arrived) reached their sink; duplicates to sinks \(report.duplicates) while running, \(report.duplicatesAfterRestart) after a restart; "
                + "undelivered: \(report.held) held in custody, \(report.lost) lost)")
        let perMessage = report.steadyDelivered == 0 ? 0 : Double(report.steadyMessagePackets) / Double(report.steadyDelivered)
        let optimal = report.steadyDelivered == 0 ? 0 : Double(report.steadyOptimalHops) / Double(report.steadyDelivered)
        print(
            "\(n) nodes: \(fmt(report.timesOptimal)) x optimal (steady phase, routes learned: \(fmt(perMessage)) message DATA frames per delivered message "
                + "| baseline shortest path \(fmt(optimal)) hops; receipts \(report.steadyReceiptPackets) packets; loss alone costs 1/(1−loss) = \(fmt(1 / (1 - configuration.loss))) x)")
        let virtualSeconds = Double(report.virtualTime.components.seconds)
        let announceBits = Double(report.wire.bytes(WireTally.Kind.announce) * 8)
        let announcePerLink: Double = announceBits / Double(max(1, 2 * report.edges)) / max(1, virtualSeconds)
        let capacityShare: Double = announcePerLink * 100 / Double(configuration.linkBitrate)
        let control = fmt(report.controlPercent)
        let steadyControl = fmt(report.steadyControlPercent)
        let runningControl = fmt(report.runningControlPercent)
        let sinceKnownControl = fmt(report.sinceKnownControlPercent)
        print(
            "\(n) nodes: control \(control) % (announcement bytes / all bytes on links, whole run; "
                + "after convergence (routes settled; steady, partition, churn) \(runningControl) %; from the quiet mark \(fmt(report.sinceQuietControlPercent)) %; "
                + "from the 99.5 % mark \(sinceKnownControl) %; "
                + "steady phase \(steadyControl) %; "
                + "announcements \(fmt(announcePerLink)) bit/s per link direction = \(fmt(capacityShare)) % of the \(configuration.linkBitrate / 1000) kbit/s links)")
        print(
            "\(n) nodes: memory \(fmt(Double(rssConverged - rssBefore) / Double(n) / 1024)) KiB per node once routes converged, "
                + "\(fmt(Double(rssAfter - rssBefore) / Double(n) / 1024)) KiB at the end (RSS delta / nodes)")
        if report.topicPublished > 0 { printTopicFigures(report) }
        let wire = report.wire
        var parts: [String] = []
        for kind in WireTally.Kind.allCases { parts.append("\(kind) \(wire.bytes(kind)) B / \(wire.packets(kind)) pkts") }
        print("wire: \(wire.totalBytes) bytes; \(parts.joined(separator: ", ")); dropped \(wire.dropped) pkts")
        print("control by phase (routing frame bytes / all bytes): \(phases(report).joined(separator: "; "))")
        let stats = report.stats
        let rejected = counts(stats.announcesRejected)
        let refused = counts(stats.relayRefused)
        print(
            "routers: ack timeouts \(stats.ackTimeouts), delivery retries \(stats.deliveryRetries), duplicates dropped \(stats.duplicatesDropped), "
                + "relayed \(stats.messagesRelayed), announcements sent \(stats.announcesSent) accepted \(stats.announcesAccepted) ignored \(stats.announcesIgnored) "
                + "suppressed \(stats.announcesSuppressed) shortcuts \(stats.shortcutsOffered) "
                + "rejected [\(rejected)], route requests [\(counts(stats.routeRequests))], summaries [\(counts(stats.routeSummaries))], relay refused [\(refused)]")
        print("time: \(report.virtualTime) virtual in \(report.realTime) real; \(report.forcedAdvances) forced clock advances")
        for line in report.undelivered { print("undelivered: \(line)") }
        for line in report.busiestSequences { print("busiest sequences, \(line)") }
    }

    /// Each phase's routing share, split by routing frame.
    static func phases(_ report: SimulationReport) -> [String] {
        [("whole run", report.wire), ("from the 99.5 % mark", report.sinceKnownWire), ("from the quiet mark", report.sinceQuietWire),
                ("after convergence", report.runningWire), ("steady", report.steadyWire),
                ("partition", report.partitionWire), ("churn", report.churnWire)].map { name, wire in
            let total = max(1, wire.totalBytes)
            let split = WireTally.RoutingFrame.allCases.map { "\($0) \(fmt(Double(wire.routing($0)) * 100 / Double(total)))" }
            let line = "\(name) \(fmt(Double(wire.bytes(.announce)) * 100 / Double(total))) % [\(split.joined(separator: ", "))] of \(wire.totalBytes) B"
            // The census counts "new" against the phase a sequence first crossed a link
            // in: meaningful for one phase, not for spans of several.
            guard ["steady", "partition", "churn"].contains(name) else { return line }
            return line + "; ANNOUNCE frames of sequences new in the phase \(wire.announcesOfNewSequences) (\(wire.sequencesFirstSent) sequences), "
                + "of older sequences \(wire.announcesOfOldSequences), with the solicited flag \(wire.solicitedAnnounces)"
        }
    }

    static func counts(_ values: [String: Int]) -> String {
        values.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }

    static func fmt(_ value: Double) -> String { BenchFigure.format(value) }

    static func elapsed(since start: ContinuousClock.Instant) -> String {
        let seconds = Double((ContinuousClock.now - start).components.attoseconds) / 1e18 + Double((ContinuousClock.now - start).components.seconds)
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
