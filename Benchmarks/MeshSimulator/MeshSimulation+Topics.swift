import MeshCore
import Synchronization

extension MeshSimulation {
    /// Only the topic phase (`MeshBench sim --topics-only`): the routers start, links
    /// come up for `settle` (virtual time), then ``runTopics(into:)``; no routed
    /// traffic, partition or churn. For iterating on the gossip in a minute or two.
    public func runTopicsOnly(settle: Duration = .seconds(10)) async -> SimulationReport {
        let realStart = ContinuousClock.now
        var report = graphReport()
        let driver = Task { await drive() }
        defer { driver.cancel() }
        progress("starting \(nodes.count) routers, \(report.edges) links (topic phase only)")
        for node in nodes { await start(node) }
        try? await clock.sleep(for: settle)
        let wireBefore = tally.snapshot
        await runTopics(into: &report)
        report.wire = tally.snapshot.since(wireBefore)
        report.virtualTime = clock.elapsed
        for node in nodes {
            if let router = node.router { report.stats.add(await router.stats()) }
        }
        report.forcedAdvances = forced.load(ordering: .relaxed)
        progress("stopping")
        for node in nodes { await stop(node) }
        report.realTime = ContinuousClock.now - realStart
        return report
    }

    /// The topic phase, once every direct message is settled (no partition, no node
    /// down): `topicShare` of the nodes subscribe to one topic, the gossip mesh forms,
    /// `topicMessages` messages of 200 bytes are published from random nodes one a
    /// virtual second, and the run counts which subscribers got which, and the topic
    /// frames the routers wrote. Each (subscriber, message) pair missed is explained
    /// in ``SimulationReport/topicMisses`` (the first 40) and summed up in
    /// ``SimulationReport/topicDiagnostics``.
    func runTopics(into report: inout SimulationReport) async {
        let topic = "/scmesh/sim/bench/v1"
        let want = max(2, Int((Double(nodes.count) * configuration.topicShare).rounded()))
        let subscribers = random.withLock { random in Set(Array(0..<nodes.count).shuffled(using: &random).prefix(want))
        }
        progress("topics: \(subscribers.count) nodes subscribe to \(topic)")
        for index in subscribers.sorted() {
            do { try await nodes[index].router?.subscribe(to: topic) } catch {
                progress("n\(index) could not subscribe: \(error)")
            }
        }
        try? await clock.sleep(for: .seconds(20))  // subscriptions spread, meshes graft
        var before = 0
        var statsBefore = TopicCounters()
        for node in nodes {
            guard let stats = await node.router?.stats().topics else { continue }
            before += stats.transmissions
            statsBefore.add(stats)
        }
        let wireBefore = tally.snapshot
        /// One publication, and how the publisher stood in the topic when it published.
        struct Publication {
            var id: MessageID
            var from: Int
            var mesh: Int
            var peers: Int
        }
        var published: [Publication] = []
        for number in 0..<configuration.topicMessages {
            let from = random.withLock { Int.random(in: 0..<nodes.count, using: &$0) }
            let payload = (0..<200).map { UInt8(truncatingIfNeeded: $0 &+ number) }
            let standing = await nodes[from].router?.topics().first { $0.topic == topic }
            do {
                if let id = try await nodes[from].router?.publish(payload, to: topic) {
                    published.append(
                        Publication(
                            id: id,
                            from: from,
                            mesh: standing?.mesh.count ?? 0,
                            peers: standing?.peers.count ?? 0
                        )
                    )
                }
            } catch {
                progress("publish from n\(from) refused: \(error)")
            }
            try? await clock.sleep(for: .seconds(1))
        }
        try? await clock.sleep(for: .seconds(30))  // pushes, then IHAVE/IWANT repair
        report.topicWire = tally.snapshot.since(wireBefore)
        var after = 0
        var statsAfter = TopicCounters()
        var standings: [TopicSnapshot?] = []
        for node in nodes {
            if let stats = await node.router?.stats().topics {
                after += stats.transmissions
                statsAfter.add(stats)
            }
            standings.append(await node.router?.topics().first { $0.topic == topic })
        }
        var expected = 0
        var got = 0
        var duplicates = 0
        var misses: [String] = []
        var missedByHops: [Int: Int] = [:]
        var pairsByHops: [Int: Int] = [:]
        var missedFromSubscriber = 0
        var missesPerMessage: [Int] = []
        for (number, message) in published.enumerated() {
            let copies = deliveries.topicCopies(message.id)
            let hops = graph.hops(from: message.from)
            var missed = 0
            for subscriber in subscribers.sorted() where subscriber != message.from {
                expected += 1
                pairsByHops[hops[subscriber], default: 0] += 1
                if let count = copies[subscriber] {
                    got += 1
                    duplicates += count - 1
                    continue
                }
                missed += 1
                missedByHops[hops[subscriber], default: 0] += 1
                if subscribers.contains(message.from) { missedFromSubscriber += 1 }
                // The nearest subscriber (in hops from this one) that got the message.
                let around = graph.hops(from: subscriber)
                let nearestHolder = copies.keys.map { around[$0] }.min()
                let standing = standings[subscriber]
                guard misses.count < 40 else { continue }
                misses.append(
                    "message \(number) from n\(message.from) (\(subscribers.contains(message.from) ? "subscribed" : "not subscribed"), "
                        + "mesh \(message.mesh) of \(message.peers) announcing neighbours) missed by n\(subscriber): "
                        + "\(hops[subscriber]) hops from the publisher, nearest subscriber holding it \(nearestHolder.map { "\($0) hops" } ?? "none"); "
                        + "n\(subscriber) at the end: mesh \(standing?.mesh.count ?? 0) of \(standing?.peers.count ?? 0) announcing, "
                        + "\(graph.neighbours[subscriber].count) neighbours, \(standing?.cached ?? 0) messages cached"
                )
            }
            missesPerMessage.append(missed)
        }
        let diff = statsAfter.since(statsBefore)
        let relays = standings.indices.filter { !subscribers.contains($0) && standings[$0]?.relaying == true }.count
        let meshSizes = standings.compactMap { $0?.mesh.count }
        let cachedShort = standings.indices.filter {
            (standings[$0]?.relaying ?? false) && (standings[$0]?.cached ?? 0) < published.count
        }.count
        var diagnostics: [String] = []
        diagnostics.append(
            "topic misses by hops from the publisher (missed/pairs): "
                + pairsByHops.keys.sorted().map { "\($0): \(missedByHops[$0] ?? 0)/\(pairsByHops[$0] ?? 0)" }.joined(
                    separator: ", "
                )
        )
        diagnostics.append(
            "topic misses per message: \(missesPerMessage.map(String.init).joined(separator: " ")); "
                + "\(missedFromSubscriber) of \(expected - got) missed pairs had a subscribed publisher"
        )
        diagnostics.append(
            "topic nodes taking part: \(subscribers.count) subscribed + \(relays) relaying of \(nodes.count); mesh sizes min \(meshSizes.min() ?? 0) "
                + "mean \(meshSizes.isEmpty ? 0 : Double(meshSizes.reduce(0, +)) / Double(meshSizes.count)) max \(meshSizes.max() ?? 0); "
                + "\(cachedShort) taking part hold fewer than \(published.count) messages at the end"
        )
        diagnostics.append(
            "topic counters in the phase: accepted \(diff.accepted), duplicates \(diff.duplicates), transmissions \(diff.transmissions), "
                + "IHAVE sent \(diff.ihavesSent), IWANT IDs asked \(diff.iwantRequested), served \(diff.iwantServed), "
                + "grafts \(diff.graftsSent)/\(diff.graftsReceived), prunes \(diff.prunesSent)/\(diff.prunesReceived), "
                + "relay refused \(diff.relayRefused), outbox dropped \(diff.outboxDropped), rejected [\(diff.rejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))]"
        )
        report.topicSubscribers = subscribers.count
        report.topicPublished = published.count
        report.topicExpected = expected
        report.topicDelivered = got
        report.topicDuplicates = duplicates
        report.topicTransmissions = after - before
        report.topicMisses = misses
        report.topicDiagnostics = diagnostics
    }
}

extension TopicCounters {
    /// Adds `other`'s counts to these.
    mutating func add(_ other: TopicCounters) {
        published += other.published
        delivered += other.delivered
        accepted += other.accepted
        transmissions += other.transmissions
        duplicates += other.duplicates
        relayRefused += other.relayRefused
        graftsSent += other.graftsSent
        graftsReceived += other.graftsReceived
        prunesSent += other.prunesSent
        prunesReceived += other.prunesReceived
        ihavesSent += other.ihavesSent
        iwantRequested += other.iwantRequested
        iwantServed += other.iwantServed
        outboxDropped += other.outboxDropped
        for (key, value) in other.rejected { rejected[key, default: 0] += value }
    }

    /// The counts since `earlier` (rejections by reason too).
    func since(_ earlier: TopicCounters) -> TopicCounters {
        var diff = self
        diff.published -= earlier.published
        diff.delivered -= earlier.delivered
        diff.accepted -= earlier.accepted
        diff.transmissions -= earlier.transmissions
        diff.duplicates -= earlier.duplicates
        diff.relayRefused -= earlier.relayRefused
        diff.graftsSent -= earlier.graftsSent
        diff.graftsReceived -= earlier.graftsReceived
        diff.prunesSent -= earlier.prunesSent
        diff.prunesReceived -= earlier.prunesReceived
        diff.ihavesSent -= earlier.ihavesSent
        diff.iwantRequested -= earlier.iwantRequested
        diff.iwantServed -= earlier.iwantServed
        diff.outboxDropped -= earlier.outboxDropped
        for (key, value) in earlier.rejected { diff.rejected[key, default: 0] -= value }
        diff.rejected = diff.rejected.filter { $0.value != 0 }
        return diff
    }
}
