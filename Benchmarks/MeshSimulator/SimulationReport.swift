import MeshCore

/// What a ``MeshSimulation`` run measured.
public struct SimulationReport: Sendable {
    /// Routers, links, mean degree, edges added to connect the graph, and its diameter.
    public var nodes = 0, edges = 0, bridges = 0, diameter = 0
    /// The routers' `max_hops` as run.
    public var maxHops = 0
    /// The TTL a direct message starts with (`default_ttl`) as run.
    public var messageTTL = 0
    /// Undelivered messages that some node still holds queued (custody kept, no route
    /// that takes them yet), and those neither delivered, arrived nor held (lost).
    public var held = 0, lost = 0
    /// The graph's mean degree.
    public var meanDegree = 0.0
    /// Virtual time until the routers knew 99.5 % of the routes between them (or the limit).
    public var convergence: Duration = .zero
    /// Routes known at convergence, of nodes × (nodes − 1).
    public var routesKnown = 0, routesPossible = 0
    /// Σ route hops / Σ shortest-path hops over the routes known at convergence.
    public var routeStretch = 0.0
    /// Virtual time until the routes settled after the 99.5 % mark (in every look,
    /// 10 s apart, over a route summary interval and 10 s more, at most 0.1 % of the
    /// possible routes appeared, went, or changed next hop or hops; the same as ``convergence`` when the run does not
    /// wait for that, or at the limit): where the steady phase starts.
    public var settled: Duration = .zero
    /// Routes that changed in the last 10 s before the settled mark.
    public var settledChanges = 0
    /// Virtual time of the *quiet* mark, looser than the settled one: the first
    /// look after the 99.5 % mark at which the routes known and their Σ hops had each
    /// moved by at most 0.1 % in 10 s (nil until reached).
    public var quiet: Duration?
    /// The wire tally at the quiet mark.
    public var quietWire: WireTally.Snapshot?
    /// Routes known, and their stretch (as ``routeStretch``), once settled.
    public var settledKnown = 0, settledStretch = 0.0
    /// Routes longer than the shortest path once settled, and of those the ones for
    /// which a neighbour holds a route of the same sequence at least two hops shorter
    /// (one that does not go through the node).
    public var settledStretched = 0, settledShortcuts = 0
    /// Messages sent, and those whose signed receipt made them delivered at the origin.
    public var sent = 0, delivered = 0
    /// Payload bytes of the messages sent (the application's bytes, before sealing).
    public var payloadBytes = 0
    /// Messages that reached their destination's sink at least once.
    public var arrived = 0
    /// Extra copies handed to a destination's sink: while it ran, and after it was
    /// restarted (a real node's durable inbox drops those by its dedup log).
    public var duplicates = 0, duplicatesAfterRestart = 0
    /// The steady phase (routes learned, loss on, no partition or churn): messages
    /// delivered, message DATA frames and receipt DATA frames written (retries and
    /// lost ones included; a frame fragmented to the link MTU counts once), and Σ shortest-path hops of the delivered messages.
    public var steadyDelivered = 0, steadyMessagePackets = 0, steadyReceiptPackets = 0, steadyOptimalHops = 0
    /// Everything written on links over the run, and in the steady phase.
    public var wire = WireTally.Snapshot(packets: [0, 0, 0, 0], bytes: [0, 0, 0, 0], dropped: 0)
    /// What was written on links in the steady phase.
    public var steadyWire = WireTally.Snapshot(packets: [0, 0, 0, 0], bytes: [0, 0, 0, 0], dropped: 0)
    /// What was written on links from the end of route convergence (the settled mark)
    /// to the end of the run: the steady phase, the partition, the churn and the waits
    /// after them (the mesh running, without its one-time table building).
    public var runningWire = WireTally.Snapshot(packets: [0, 0, 0, 0], bytes: [0, 0, 0, 0], dropped: 0)
    /// What was written on links from the quiet mark to the end of the run: as
    /// ``runningWire`` with the routes' last improvements that the quiet mark missed.
    public var sinceQuietWire = WireTally.Snapshot(packets: [0, 0, 0, 0], bytes: [0, 0, 0, 0], dropped: 0)
    /// What was written on links from the 99.5 % mark to the end of the run: as
    /// ``runningWire`` with the wait for the routes to settle (the tail of the table
    /// building: routes improved, same sequences).
    public var sinceKnownWire = WireTally.Snapshot(packets: [0, 0, 0, 0], bytes: [0, 0, 0, 0], dropped: 0)
    /// What was written on links from the partition to the churn (the partition, its
    /// heal and the messages sent meanwhile), and from the churn to the end of the run
    /// (the routers down, restarted, and the wait for every message).
    public var partitionWire = WireTally.Snapshot(packets: [0, 0, 0, 0], bytes: [0, 0, 0, 0], dropped: 0)
    /// See ``partitionWire``.
    public var churnWire = WireTally.Snapshot(packets: [0, 0, 0, 0], bytes: [0, 0, 0, 0], dropped: 0)
    /// Virtual and real time the run took.
    public var virtualTime: Duration = .zero, realTime: Duration = .zero
    /// Nodes partitioned, and nodes stopped and restarted.
    public var partitioned = 0, churned = 0
    /// The routers' counters, summed (restarted routers count from their restart).
    public var stats = RouterStats()
    /// ANNOUNCE frames whose hop count a lying relay rewrote.
    public var lies = 0
    /// Times the driver advanced time although the network was still busy (a busy
    /// spell longer than 2 s of real time).
    public var forcedAdvances = 0
    /// The topic phase: subscribers, messages published, (subscriber, message)
    /// pairs expected (the publisher itself excluded) and delivered, extra copies
    /// to subscribers' sinks, and topic frames written by every router meanwhile.
    public var topicSubscribers = 0, topicPublished = 0, topicExpected = 0, topicDelivered = 0, topicDuplicates = 0
    /// Topic frames (pushes, IWANT answers, publications) written in the topic phase.
    public var topicTransmissions = 0
    /// What crossed the links in the topic phase (from the first publication to the
    /// end of the repair wait): topic messages and topic control frames (IHAVE, IWANT,
    /// GRAFT, PRUNE, SUBSCRIBE) by frames and bytes, beside the routing's own traffic.
    public var topicWire: WireTally.Snapshot?
    /// The first (subscriber, message) pairs missed in the topic phase, each explained.
    public var topicMisses: [String] = []
    /// The topic phase summed up: misses by distance and by message, who took part,
    /// the gossip counters.
    public var topicDiagnostics: [String] = []
    /// Why messages were not delivered (the first few), empty when all were.
    public var undelivered: [String] = []
    /// The announced sequences first sent in each phase (steady, partition, churn) that
    /// took the most ANNOUNCE frames: a line each, five per phase.
    public var busiestSequences: [String] = []

    /// Delivered / sent, in percent.
    public var deliveryPercent: Double { sent == 0 ? 0 : Double(delivered) * 100 / Double(sent) }

    /// Message DATA packets per delivered message over the shortest-path hops, in the
    /// steady phase.
    public var timesOptimal: Double {
        steadyOptimalHops == 0 ? .nan : Double(steadyMessagePackets) / Double(steadyOptimalHops)
    }

    /// Announcement bytes over all bytes written on links, in percent, over the run.
    public var controlPercent: Double { Self.percent(wire.bytes(.announce), of: wire.totalBytes) }

    /// Announcement bytes over all bytes once routes had converged, in percent.
    public var runningControlPercent: Double { Self.percent(runningWire.bytes(.announce), of: runningWire.totalBytes) }

    /// Announcement bytes over all bytes from the quiet mark to the end, in percent.
    public var sinceQuietControlPercent: Double {
        Self.percent(sinceQuietWire.bytes(.announce), of: sinceQuietWire.totalBytes)
    }

    /// Announcement bytes over all bytes from the 99.5 % mark to the end, in percent.
    public var sinceKnownControlPercent: Double {
        Self.percent(sinceKnownWire.bytes(.announce), of: sinceKnownWire.totalBytes)
    }

    /// Announcement bytes over all bytes in the steady phase, in percent.
    public var steadyControlPercent: Double { Self.percent(steadyWire.bytes(.announce), of: steadyWire.totalBytes) }

    /// Topic deliveries over (subscriber, message) pairs, in percent.
    public var topicDeliveryPercent: Double { Self.percent(topicDelivered, of: topicExpected) }

    /// Topic frames written per subscriber per message.
    public var topicTransmissionsPerSubscriber: Double {
        topicPublished == 0 || topicSubscribers == 0
            ? .nan : Double(topicTransmissions) / Double(topicPublished * topicSubscribers)
    }

    /// What flooding costs on the same graph: every node sends each message once to
    /// every neighbour but the one it came from (the publisher to all), 2 × links −
    /// (nodes − 1) frames per message, loss-free; per subscriber.
    public var floodingTransmissionsPerSubscriber: Double {
        topicSubscribers == 0 ? .nan : Double(2 * edges - (nodes - 1)) / Double(topicSubscribers)
    }

    /// Topic control frames (IHAVE, IWANT, GRAFT, PRUNE, SUBSCRIBE, UNSUBSCRIBE) written
    /// in the topic phase per subscriber per message: the repair's and the mesh's cost,
    /// not in ``topicTransmissionsPerSubscriber``.
    public var topicControlPerSubscriber: Double {
        guard let wire = topicWire, topicPublished > 0, topicSubscribers > 0 else { return .nan }
        return Double(wire.frames(.topicControl)) / Double(topicPublished * topicSubscribers)
    }

    /// Topic bytes (messages and control frames) written in the topic phase over what
    /// flooding would write: its frame count times the mean topic message frame.
    public var topicBytesOverFlooding: Double {
        guard let wire = topicWire, wire.frames(.topicMessage) > 0, topicPublished > 0 else { return .nan }
        let meanFrame = Double(wire.bytes(.topicMessage)) / Double(wire.frames(.topicMessage))
        let flooding = Double(2 * edges - (nodes - 1)) * Double(topicPublished) * meanFrame
        return Double(wire.bytes(.topicMessage) + wire.bytes(.topicControl)) / flooding
    }

    static func percent(_ part: Int, of whole: Int) -> Double { whole == 0 ? 0 : Double(part) * 100 / Double(whole) }
}
