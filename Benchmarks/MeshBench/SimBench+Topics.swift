import MeshCore
import MeshSimulator

extension SimBench {
    /// Prints a `--topics-only` run: the graph, topic delivery and transmissions
    /// against flooding on the same graph; with `verbose`, the diagnostics and every
    /// missed pair explained (the first 40).
    static func printTopics(_ report: SimulationReport, _ configuration: SimulationConfiguration, verbose: Bool) {
        let n = report.nodes
        print("== mesh simulation, topic phase only: \(n) nodes")
        print(
            "graph: \(n) nodes, \(report.edges) links, mean degree \(fmt(report.meanDegree)), diameter \(report.diameter) hops; "
                + "loss \(fmt(configuration.loss * 100)) % per frame; seed \(configuration.seed); topics.ttl \(configuration.topics.ttl), "
                + "D \(configuration.topics.meshDegree) (low \(configuration.topics.meshDegreeLow), high \(configuration.topics.meshDegreeHigh)), "
                + "D_lazy \(configuration.topics.gossipDegree), IHAVE to mesh peers \(configuration.topics.gossipToMesh ? "on" : "off"); "
                + "route announcements \(configuration.routesAcrossMesh ? "across the graph" : "to direct neighbours only (max_hops 1)")"
        )
        printTopicFigures(report, diagnostics: verbose)
        guard verbose else { return }
        for line in report.topicMisses { print("missed: \(line)") }
        print(
            "time: \(report.virtualTime) virtual in \(report.realTime) real; \(report.forcedAdvances) forced clock advances"
        )
    }

    /// The topic phase's lines of a run: delivery, transmissions against flooding on
    /// the same graph, and with `diagnostics` the gossip's counters.
    static func printTopicFigures(_ report: SimulationReport, diagnostics: Bool = true) {
        let n = report.nodes
        print(
            "\(n) nodes: topics delivery \(fmt(report.topicDeliveryPercent)) % (\(report.topicDelivered) of \(report.topicExpected) subscriber × message pairs; "
                + "\(report.topicPublished) messages of 200 B from random nodes to \(report.topicSubscribers) subscribers; duplicates to sinks \(report.topicDuplicates))"
        )
        let gossip = report.topicTransmissionsPerSubscriber
        let flooding = report.floodingTransmissionsPerSubscriber
        print(
            "\(n) nodes: topics \(fmt(gossip)) transmissions per subscriber per message (\(report.topicTransmissions) topic frames) "
                + "| baseline flooding \(fmt(flooding)) (2 × links − (nodes − 1) per message, loss-free) | ratio \(fmt(gossip / flooding))"
        )
        if let wire = report.topicWire {
            // Not in the ratio above: the control frames the mesh and the repair cost.
            let control = report.topicControlPerSubscriber
            print(
                "\(n) nodes: topics control \(fmt(control)) frames per subscriber per message (\(wire.frames(.topicControl)) IHAVE, IWANT, GRAFT, PRUNE, "
                    + "SUBSCRIBE frames, \(wire.bytes(.topicControl)) B; not in the ratio above) | messages and control together \(fmt(gossip + control)) "
                    + "= \(fmt((gossip + control) / flooding)) x flooding by frames; by bytes (\(wire.bytes(.topicMessage)) B of messages + control) "
                    + "\(fmt(report.topicBytesOverFlooding)) x flooding's message bytes"
            )
        }
        guard diagnostics else { return }
        for line in report.topicDiagnostics { print(line) }
    }
}
