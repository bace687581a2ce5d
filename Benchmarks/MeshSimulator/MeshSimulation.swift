import Logging
import MeshCore
import MeshTesting
import Synchronization
import TransportLoopback

/// An in-process mesh of ``Router``s over ``LoopbackTransport`` links on a random
/// geometric graph, on a virtual clock (``SimulationClock``), with per-frame loss,
/// a partition that heals, node churn (routers stopped and restarted with their
/// outbound queue, so custody survives) and random-pair traffic. ``run()`` returns a
/// ``SimulationReport``; `MeshBench sim` prints it.
///
/// Links use ``PlaintextLinkSecurity`` and the cheap ``StandInSealer`` and
/// ``SimulationSigner`` stand-ins: what is measured is routing, not cryptography.
public final class MeshSimulation: Sendable {
    /// The run's settings.
    public let configuration: SimulationConfiguration
    /// The graph the routers are linked on.
    public let graph: SimulationGraph
    /// The virtual clock every router runs on.
    public let clock = SimulationClock()
    /// What crossed the links.
    public let tally = WireTally()
    let network: LoopbackNetwork
    let nodes: [SimulationNode]
    let deliveries = Deliveries()
    let forced = Atomic<Int>(0)
    let payloadBytes = Atomic<Int>(0)
    let progress: @Sendable (String) -> Void
    let random: Mutex<SimulationRandom>
    /// The routers' configuration as run: the configured one, with `max_hops` and the
    /// flood TTL raised to the graph's diameter + 4 and the default TTL to three times
    /// that when they are lower (the defaults cannot span a few hundred nodes of a
    /// geometric mesh).
    public let routerConfiguration: RouterConfiguration
    /// The graph's diameter, in hops.
    public let diameter: Int
    /// The nodes that lie about hop counts (``SimulationConfiguration/liars``): the
    /// best-connected ones.
    public let liars: Set<Int>

    /// Builds the graph and the nodes (nothing runs yet).
    /// - Parameter progress: told what the run is doing, phase by phase.
    public init(
        configuration: SimulationConfiguration,
        progress: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(MeshError) {
        try configuration.validate()
        self.configuration = configuration
        self.progress = progress
        var random = SimulationRandom(seed: configuration.seed)
        graph = SimulationGraph(count: configuration.nodes, targetDegree: configuration.targetDegree, random: &random)
        self.random = Mutex(random)
        network = LoopbackNetwork(seed: configuration.seed)
        let graph = self.graph
        diameter = (0..<configuration.nodes).map { graph.hops(from: $0).max() ?? 0 }.max() ?? 0
        liars = Set(
            (0..<configuration.nodes).sorted { (graph.neighbours[$0].count, $1) > (graph.neighbours[$1].count, $0) }
                .prefix(configuration.liars)
        )
        var router = configuration.router
        let reach = UInt8(min(255, diameter + 4))
        if !configuration.routesAcrossMesh {
            router.routing.maxHops = 1
        } else if router.routing.maxHops < reach {
            router.routing.maxHops = reach
        }
        // Three times the reach for direct messages, as the node's default (32) is for
        // its max_hops (7): a copy that detours while routes change still arrives.
        let ttl = UInt8(min(255, 3 * Int(reach)))
        if router.defaultTTL < ttl { router.defaultTTL = ttl }
        if router.flood.ttl < reach { router.flood.ttl = reach }
        routerConfiguration = router
        let deliveries = self.deliveries
        let clock = self.clock
        nodes = (0..<configuration.nodes).map { index in
            SimulationNode(index: index, peerID: .random(), clock: clock, deliveries: deliveries)
        }
    }

    static func address(_ index: Int) -> String { "n\(index)" }

    /// A report with the graph's figures filled in.
    func graphReport() -> SimulationReport {
        var report = SimulationReport()
        report.nodes = nodes.count
        report.edges = graph.edges.count
        report.meanDegree = graph.meanDegree
        report.bridges = graph.bridges
        report.diameter = diameter
        report.maxHops = Int(routerConfiguration.routing.maxHops)
        report.messageTTL = Int(routerConfiguration.defaultTTL)
        return report
    }

    // MARK: Running

    /// Runs the whole scenario and reports. `converged` is called once routes have
    /// converged, before any message is sent (the benchmark reads memory there).
    public func run(converged: @Sendable () -> Void = {}) async -> SimulationReport {
        let realStart = ContinuousClock.now
        var report = graphReport()
        let hops = (0..<nodes.count).map { graph.hops(from: $0) }
        let driver = Task { await drive() }
        defer { driver.cancel() }

        progress("starting \(nodes.count) routers, \(report.edges) links")
        for node in nodes { await start(node) }
        let knownWire = await converge(hops: hops, into: &report)
        converged()
        let convergedWire = tally.snapshot

        // Steady phase: routes learned, loss on, nothing else disturbed.
        let steadyCount = max(1, configuration.messages / 2)
        progress("steady phase: \(steadyCount) messages")
        tally.beginPhase()
        let steadyStart = tally.snapshot
        var requestMarks = [await requestCounters()]
        let steady = await sendRandom(steadyCount, hops: hops, from: nil)
        _ = await waitUntilDelivered(steady, limit: configuration.settleLimit)
        try? await clock.sleep(for: .seconds(10))  // trailing hop retries and acks
        let steadyWire = tally.snapshot.since(steadyStart)
        report.steadyWire = steadyWire
        report.steadyMessagePackets = steadyWire.frames(.message)
        report.steadyReceiptPackets = steadyWire.frames(.receipt)
        for message in steady where await isDelivered(message) {
            report.steadyDelivered += 1
            report.steadyOptimalHops += message.hops
        }

        // Partition: a disc of nodes cut off from the rest, messages sent meanwhile.
        tally.beginPhase()
        let partitionStart = tally.snapshot
        requestMarks.append(await requestCounters())
        let region = pickRegion()
        report.partitioned = region.count
        let cut = graph.edges.filter { region.contains($0.0) != region.contains($0.1) }
        progress("partition: \(region.count) nodes cut off (\(cut.count) links) for \(configuration.partitionDuration)")
        for (a, b) in cut { network.partition(Self.address(a), Self.address(b)) }
        try? await clock.sleep(for: .seconds(5))
        let duringPartition = await sendRandom(max(1, configuration.messages / 4), hops: hops, from: nil)
        try? await clock.sleep(for: configuration.partitionDuration)
        for (a, b) in cut { network.heal(Self.address(a), Self.address(b)) }
        progress("partition healed")

        // Churn: some routers stop (their queues kept), messages flow meanwhile, and
        // they come back.
        tally.beginPhase()
        let churnStart = tally.snapshot
        requestMarks.append(await requestCounters())
        report.partitionWire = churnStart.since(partitionStart)
        let churned = pickChurned()
        report.churned = churned.count
        progress("churn: stopping \(churned.count) routers for \(configuration.churnDowntime)")
        for index in churned { await stop(nodes[index]) }
        let churnCount = max(1, configuration.messages - steadyCount - duringPartition.count)
        let duringChurn = await sendRandom(churnCount, hops: hops, from: Set(0..<nodes.count).subtracting(churned))
        try? await clock.sleep(for: configuration.churnDowntime)
        for index in churned {
            nodes[index].queue.requeueClaimed()
            await start(nodes[index])
        }
        progress("churned routers restarted; waiting for every message")

        let all = steady + duringPartition + duringChurn
        _ = await waitUntilDelivered(all, limit: configuration.settleLimit)
        report.sent = all.count
        report.payloadBytes = payloadBytes.load(ordering: .relaxed)
        for message in all where await isDelivered(message) { report.delivered += 1 }
        let copies = deliveries.copies
        report.arrived = all.count { copies[$0.id] != nil }
        report.duplicates = copies.values.reduce(0) { $0 + $1.whileRunning }
        report.duplicatesAfterRestart = copies.values.reduce(0) { $0 + $1.afterRestart }
        report.undelivered = await explainUndelivered(all, partitioned: region, churned: Set(churned))
        for message in all where await !isDelivered(message) {
            if copies[message.id] != nil { continue }
            var held = false
            for node in nodes where node.index != message.from {
                if let record = await node.queue.record(message.id), !record.status.isFinal { held = true }
            }
            if let record = await nodes[message.from].queue.record(message.id), record.status == .queued { held = true }
            if held { report.held += 1 } else { report.lost += 1 }
        }
        report.wire = tally.snapshot
        report.runningWire = report.wire.since(convergedWire)
        report.sinceQuietWire = report.wire.since(report.quietWire ?? convergedWire)
        report.sinceKnownWire = report.wire.since(knownWire)
        report.churnWire = report.wire.since(churnStart)
        for (phase, name) in [(1, "steady"), (2, "partition"), (3, "churn")] {
            for (origin, sequence, count) in tally.busiestSequences(phase: phase, count: 5) {
                let hops = count.byHops.enumerated().filter { $0.element > 0 }.map { "\($0.offset):\($0.element)" }
                    .joined(separator: " ")
                report.busiestSequences.append(
                    "\(name): origin \(origin)…, sequence \(sequence >> 20) << 20 + \(sequence & 0xFFFFF): \(count.frames) frames, "
                        + "\(count.solicited) with the solicited flag; by hops \(hops)"
                )
            }
        }
        requestMarks.append(await requestCounters())
        report.busiestSequences += requestLines(requestMarks, partitioned: region, churned: churned)
        report.virtualTime = clock.elapsed
        for node in nodes {
            if let router = node.router { report.stats.add(await router.stats()) }
            report.stats.add(node.retiredStats.withLock { $0 })
        }
        if configuration.topicMessages > 0 { await runTopics(into: &report) }
        report.forcedAdvances = forced.load(ordering: .relaxed)
        report.lies = tally.lies
        progress("stopping")
        for node in nodes { await stop(node) }
        report.realTime = ContinuousClock.now - realStart
        return report
    }

    /// Advances virtual time whenever the links have been quiet for two checks in a
    /// row (about 2 ms of real time): to the next sleeper's deadline, by at least the
    /// quantum. A busy spell longer than 2 s of real time advances by one quantum
    /// anyway (counted).
    func drive() async {
        var last = tally.activity
        var quiet = 0
        var busySince = ContinuousClock.now
        while !Task.isCancelled {
            do { try await Task.sleep(for: .milliseconds(1)) } catch { return }
            let activity = tally.activity
            if activity == last { quiet += 1 } else { (quiet, last) = (0, activity) }
            let now = clock.now
            if quiet >= 2 {
                let next = clock.nextDeadline ?? now + configuration.quantum
                clock.advance(to: max(next, now + configuration.quantum))
                quiet = 0
                busySince = .now
            } else if ContinuousClock.now - busySince > .seconds(2) {
                clock.advance(to: now + configuration.quantum)
                forced.add(1, ordering: .relaxed)
                busySince = .now
            }
        }
    }

    /// Waits (virtual time) until the routers know 99.5 % of the routes between them
    /// (the *known* mark) and then, with ``SimulationConfiguration/waitForSettledRoutes``,
    /// until their routes stop changing (the *settled* mark: in every look, 10 s apart,
    /// over one route summary interval and 10 s more (seven looks at the default
    /// 60 s; at least two), at most 0.1 % of the possible routes appeared, went, or
    /// changed next hop or hops); records both, with how close to the shortest paths the routes
    /// are, and the *quiet* mark (between two looks the routes known and their Σ hops
    /// each moved by at most 0.1 %, a looser mark that a wave of routes each shortened
    /// by a hop passes unseen). Returns the wire tally at the
    /// known mark.
    func converge(hops: [[Int]], into report: inout SimulationReport) async -> WireTally.Snapshot {
        let index = Dictionary(uniqueKeysWithValues: nodes.map { ($0.peerID, $0.index) })
        let possible = nodes.count * (nodes.count - 1)
        report.routesPossible = possible
        let started = clock.now
        var knownWire: WireTally.Snapshot?
        var last: (known: Int, hops: Int)?
        // Each node's route to each target: next hop << 8 | hops, −1 for none.
        var lastRoutes: [Int32]?
        var calmLooks = 0
        // Repairs come in rounds, one route summary interval apart: the calm must span
        // one, or a lull between two rounds passes for the end.
        let summaryInterval = routerConfiguration.routing.summaryInterval
        let calmNeeded = max(2, Int((summaryInterval / .seconds(10)).rounded(.up)) + 1)
        while true {
            var known = 0
            var routeHops = 0
            var shortest = 0
            var routes = [Int32](repeating: -1, count: nodes.count * nodes.count)
            for node in nodes {
                guard let router = node.router else { continue }
                for route in await router.routes() {
                    guard let target = index[route.destination], target != node.index else { continue }
                    known += 1
                    routeHops += route.hops
                    shortest += hops[node.index][target]
                    routes[node.index * nodes.count + target] = Int32(
                        (index[route.nextHop] ?? nodes.count) << 8 | min(route.hops, 255)
                    )
                }
            }
            let changed = lastRoutes.map { zip($0, routes).reduce(0) { $0 + ($1.0 != $1.1 ? 1 : 0) } }
            lastRoutes = routes
            let stretch = shortest == 0 ? .nan : Double(routeHops) / Double(shortest)
            let elapsed = clock.now - started
            let limit = elapsed >= configuration.convergenceLimit
            progress(
                "routes: \(known) of \(possible), Σ hops \(routeHops), \(changed.map { "\($0)" } ?? "-") changed, after \(elapsed) (virtual)"
            )
            // 99.5 %: with loss, a few routes age out and come back at any time.
            if knownWire == nil, known * 1000 >= possible * 995 || limit {
                (report.routesKnown, report.routeStretch, report.convergence) = (known, stretch, elapsed)
                knownWire = tally.snapshot
            }
            calmLooks = changed.map { $0 * 1000 <= possible } == true ? calmLooks + 1 : 0
            if let knownWire {
                let quiet =
                    last.map { abs(known - $0.known) * 1000 <= possible && abs(routeHops - $0.hops) * 1000 <= $0.hops }
                    ?? false
                if quiet, report.quiet == nil { (report.quiet, report.quietWire) = (elapsed, tally.snapshot) }
                if calmLooks >= calmNeeded || limit || !configuration.waitForSettledRoutes {
                    (report.settledKnown, report.settledStretch, report.settled) = (known, stretch, elapsed)
                    report.settledChanges = changed ?? 0
                    if report.quiet == nil { (report.quiet, report.quietWire) = (elapsed, tally.snapshot) }
                    let missing: String
                    (report.settledStretched, report.settledShortcuts, missing) = await stretchedRoutes(
                        hops: hops,
                        index: index
                    )
                    report.busiestSequences.append(missing)
                    return knownWire
                }
            }
            last = (known, routeHops)
            try? await clock.sleep(for: .seconds(10))
        }
    }

    /// Routes longer than the shortest path, and of those the ones for which a
    /// neighbour holds a route of the same sequence at least two hops shorter, not
    /// through the node (through that neighbour the route would be shorter: the node
    /// lost its shorter announcement, or took it too late for its feasibility
    /// distance).
    private func stretchedRoutes(
        hops: [[Int]],
        index: [PeerID: Int]
    ) async -> (stretched: Int, shortcuts: Int, missing: String) {
        var tables: [[Int: RouteSnapshot]] = Array(repeating: [:], count: nodes.count)
        for node in nodes {
            guard let router = node.router else { continue }
            for route in await router.routes() {
                if let target = index[route.destination], target != node.index { tables[node.index][target] = route }
            }
        }
        var stretched = 0
        var shortcuts = 0
        for (node, table) in tables.enumerated() {
            for (target, route) in table where route.hops > hops[node][target] {
                stretched += 1
                let shorter = graph.neighbours[node].contains { other in
                    guard let theirs = tables[other][target], index[theirs.nextHop] != node else { return false }
                    return theirs.sequence == route.sequence && theirs.hops + 1 < route.hops
                }
                if shorter { shortcuts += 1 }
            }
        }
        return (stretched, shortcuts, await missingRoutes(tables, index: index))
    }

    // MARK: Disturbances

    /// The nodes in the smallest disc around a random node that holds
    /// `partitionShare` of them.
    func pickRegion() -> Set<Int> {
        let want = Int((Double(nodes.count) * configuration.partitionShare).rounded())
        guard want > 0 else { return [] }
        let center = random.withLock { Int.random(in: 0..<nodes.count, using: &$0) }
        let (cx, cy) = graph.positions[center]
        let byDistance = nodes.indices.sorted {
            let a = graph.positions[$0]
            let b = graph.positions[$1]
            return (a.x - cx) * (a.x - cx) + (a.y - cy) * (a.y - cy) < (b.x - cx) * (b.x - cx) + (b.y - cy) * (b.y - cy)
        }
        return Set(byDistance.prefix(want))
    }

    /// `churnShare` of the nodes (at least one when the share is not 0), at random.
    func pickChurned() -> [Int] {
        guard configuration.churnShare > 0 else { return [] }
        let want = max(1, Int((Double(nodes.count) * configuration.churnShare).rounded()))
        return random.withLock { random in Array(Array(0..<nodes.count).shuffled(using: &random).prefix(want)).sorted()
        }
    }

    // MARK: Nodes

    /// Starts `node`'s router (a new one, with the node's identity, queue and sink),
    /// on a new loopback transport at its address, dialling its lower neighbours.
    func start(_ node: SimulationNode) async {
        var logger = Logger(label: "sim.n\(node.index)")
        logger.logLevel = .critical
        // As the node does from the wall clock: a restarted router's announcements are
        // newer than its last ones (a random start would be rejected as stale by every
        // neighbour, half the time, until its old sequence ages out).
        var restarted = routerConfiguration
        let elapsed = UInt64(max(0, (clock.elapsed / .milliseconds(1)).rounded(.down)))
        restarted.routing.firstSequence = (elapsed + 1) << 20
        if !configuration.featureMix.isEmpty {
            restarted.features = configuration.featureMix[node.index % configuration.featureMix.count]
        }
        let router = Router(
            security: PlaintextLinkSecurity(localPeerID: node.peerID),
            configuration: restarted,
            sealer: StandInSealer(peer: node.peerID),
            receipts: SimulationSigner(peer: node.peerID),
            sink: node.sink,
            queue: node.queue,
            clock: clock,
            topics: configuration.topics,
            announceState: configuration.keepAnnounceState ? node.announceState : nil,
            savedRoutes: configuration.keepRouteTable ? node.savedRoutes : nil,
            logger: logger
        )
        let loopback = LoopbackTransport(
            name: "lo",
            address: Self.address(node.index),
            network: network,
            configuration: .init(discovery: false, bitrate: configuration.linkBitrate)
        )
        let generation = node.generation.add(1, ordering: .relaxed).newValue
        let seed = configuration.seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(node.index) << 16 &+ UInt64(generation)
        let lie = liars.contains(node.index) ? configuration.lie : nil
        await router.add(
            TalliedTransport(loopback, tally: tally, loss: configuration.loss, seed: seed, lie: lie),
            priority: 10
        )
        node.sink.generation.store(generation, ordering: .relaxed)
        let task = Task<Void, Never> { _ = try? await router.run() }
        node.running.withLock { $0 = (router, task) }
        for other in graph.neighbours[node.index] where other < node.index {
            await router.connect(to: PeerHint(transport: "lo", address: Self.address(other)))
        }
    }

    /// Stops `node`'s router and waits for it; its queue and sink stay.
    func stop(_ node: SimulationNode) async {
        guard
            let (router, task) = node.running.withLock({ running in
                defer { running = nil }
                return running
            })
        else { return }
        let stats = await router.stats()
        node.retiredStats.withLock { $0.add(stats) }
        await router.shutdown()
        await task.value
    }
}
