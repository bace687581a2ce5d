import MeshCore
import MeshTesting

extension SimBench {
    /// Prints a `--topics-only` run: the graph, topic delivery and transmissions
    /// against flooding on the same graph, the diagnostics and every missed pair
    /// explained (the first 40).
    static func printTopics(_ report: SimulationReport, _ configuration: SimulationConfiguration) {
        let n = report.nodes
        print("== mesh simulation, topic phase only: \(n) nodes")
        print(
            "graph: \(n) nodes, \(report.edges) links, mean degree \(fmt(report.meanDegree)), diameter \(report.diameter) hops; "
                + "loss \(fmt(configuration.loss * 100)) % per frame; seed \(configuration.seed); topics.ttl \(configuration.topics.ttl)")
        printTopicFigures(report)
        for line in report.topicMisses { print("missed: \(line)") }
        print("time: \(report.virtualTime) virtual in \(report.realTime) real; \(report.forcedAdvances) forced clock advances")
    }

    /// The topic phase's lines of a run: delivery, transmissions against flooding on
    /// the same graph, and the diagnostics.
    static func printTopicFigures(_ report: SimulationReport) {
        let n = report.nodes
        print(
            "\(n) nodes: topics delivery \(fmt(report.topicDeliveryPercent)) % (\(report.topicDelivered) of \(report.topicExpected) subscriber × message pairs; "
                + "\(report.topicPublished) messages of 200 B from random nodes to \(report.topicSubscribers) subscribers; duplicates to sinks \(report.topicDuplicates))")
        let gossip = report.topicTransmissionsPerSubscriber
        let flooding = report.floodingTransmissionsPerSubscriber
        print(
            "\(n) nodes: topics \(fmt(gossip)) transmissions per subscriber per message (\(report.topicTransmissions) topic frames) "
                + "| baseline flooding \(fmt(flooding)) (2 × links − (nodes − 1) per message, loss-free) | ratio \(fmt(gossip / flooding))")
        for line in report.topicDiagnostics { print(line) }
    }
}
