import CoreMetrics
import MeshCore
import MeshNode
import Prometheus
import Synchronization

/// `/metrics`: the router's counters (``RouterStats``), the transports' and the
/// node's own, as Prometheus text through swift-metrics and swift-prometheus. Names
/// start with `scmesh_`; docs/api.md ("Metrics") lists them.
///
/// The node keeps its counters as totals; on each scrape the exporter adds what
/// changed since the last one to swift-metrics `Counter`s (made by a
/// `PrometheusMetricsFactory` over this exporter's own registry, so nothing global is
/// bootstrapped) and records the gauges.
final class MetricsExporter: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let last = Mutex<[String: Int]>([:])

    init() {
        factory = PrometheusMetricsFactory(registry: registry)
    }

    /// The Prometheus text of `status`, `peers` and the power state (nil: the node
    /// runs without a power monitor).
    func render(status: StatusReply, peers: PeersReply, power: PowerReply? = nil) -> String {
        let stats = status.stats
        for (transport, counters) in status.stats.transports {
            let labels = [("transport", transport)]
            count("scmesh_transport_frames_sent_total", labels, counters.framesSent)
            count("scmesh_transport_frames_received_total", labels, counters.framesReceived)
            count("scmesh_transport_bytes_sent_total", labels, counters.bytesSent)
            count("scmesh_transport_bytes_received_total", labels, counters.bytesReceived)
            count("scmesh_transport_failures_total", labels, counters.failures)
            count("scmesh_transport_escalations_total", labels, counters.escalationsFrom)
            count("scmesh_transport_de_escalations_total", labels, counters.deEscalationsTo)
            count("scmesh_transport_links_opened_total", labels, counters.linksOpened)
        }
        for transport in status.transports {
            gauge("scmesh_transport_up", [("transport", transport.name)], transport.state.name == "running" ? 1 : 0)
        }
        for (messageClass, direction, total) in Self.messageClasses(stats) {
            count("scmesh_messages_by_class_total", [("class", messageClass), ("direction", direction)], total)
        }
        count("scmesh_messages_sent_total", [], stats.messagesSent)
        count("scmesh_messages_received_total", [], stats.messagesReceived)
        count("scmesh_messages_relayed_total", [], stats.messagesRelayed)
        count("scmesh_relay_accepted_total", [], stats.relayAccepted)
        count("scmesh_duplicates_dropped_total", [], stats.duplicatesDropped)
        count("scmesh_retries_total", [], stats.retries)
        count("scmesh_delivery_retries_total", [], stats.deliveryRetries)
        count("scmesh_ack_timeouts_total", [], stats.ackTimeouts)
        count("scmesh_escalations_total", [], stats.escalations)
        count("scmesh_de_escalations_total", [], stats.deEscalations)
        count("scmesh_links_opened_total", [], stats.linksOpened)
        count("scmesh_links_closed_total", [], stats.linksClosed)
        count("scmesh_receipts_sent_total", [], stats.receiptsSent)
        count("scmesh_receipts_accepted_total", [], stats.receiptsAccepted)
        count("scmesh_announces_sent_total", [], stats.announcesSent)
        count("scmesh_announces_accepted_total", [], stats.announcesAccepted)
        count("scmesh_announces_ignored_total", [], stats.announcesIgnored)
        count("scmesh_announces_suppressed_total", [], stats.announcesSuppressed)
        count("scmesh_shortcuts_offered_total", [], stats.shortcutsOffered)
        for (outcome, value) in stats.routeRequests {
            count("scmesh_route_requests_total", [("outcome", outcome)], value)
        }
        for (outcome, value) in stats.routeSummaries {
            count("scmesh_route_summaries_total", [("outcome", outcome)], value)
        }
        count("scmesh_frames_refused_total", [], stats.framesRefused)
        for (type, value) in stats.framesIgnored { count("scmesh_frames_ignored_total", [("type", type)], value) }
        for (type, value) in stats.framesWithheld { count("scmesh_frames_withheld_total", [("type", type)], value) }
        count("scmesh_handshake_failures_total", [], stats.handshakeFailures)
        for (reason, value) in stats.handshakeFailuresByReason {
            count("scmesh_handshake_failures_by_reason_total", [("reason", reason)], value)
        }
        // Refusals by reason: relaying, sealed-message checks, malformed input,
        // receipts and announcements the router turned down, and what transports and
        // the node's own filters refused or dropped.
        for (reason, value) in stats.relayRefused {
            count("scmesh_refusals_total", [("source", "relay"), ("reason", reason)], value)
        }
        for (reason, value) in stats.sealedMessagesRejected {
            count("scmesh_refusals_total", [("source", "sealed_message"), ("reason", reason)], value)
        }
        for (reason, value) in stats.malformedInputs {
            count("scmesh_refusals_total", [("source", "malformed_input"), ("reason", reason)], value)
        }
        for (reason, value) in stats.receiptsRejected {
            count("scmesh_refusals_total", [("source", "receipt"), ("reason", reason)], value)
        }
        for (reason, value) in stats.announcesRejected {
            count("scmesh_refusals_total", [("source", "announce"), ("reason", reason)], value)
        }
        count("scmesh_refusals_total", [("source", "sink"), ("reason", "refused")], stats.sinkRefusals)
        count("scmesh_refusals_total", [("source", "sink"), ("reason", "discarded")], stats.sinkDiscards)
        for (source, counters) in status.transportCounters ?? [:] {
            for (reason, value) in counters {
                count("scmesh_refusals_total", [("source", source), ("reason", reason)], value)
            }
        }
        gauge("scmesh_outbox_messages", [], status.outboxCount ?? 0)
        gauge("scmesh_inbox_messages", [], status.inboxCount)
        gauge("scmesh_peers", [], status.peerCount)
        // 0 offline, 1 poor, 2 good, 3 excellent; and one series per level, 1 for the current one.
        let quality = NetworkQuality(peerCount: status.peerCount)
        gauge("scmesh_network_quality", [], quality.level)
        for level in NetworkQuality.allCases {
            gauge("scmesh_network_quality_info", [("quality", level.rawValue)], level == quality ? 1 : 0)
        }
        gauge("scmesh_relay_enabled", [], status.relayEnabled ? 1 : 0)
        if let power {
            // One series per power profile, 1 for the one in effect.
            for profile in PowerProfile.allCases {
                gauge("scmesh_power_profile_info", [("profile", profile.rawValue)], profile == power.profile ? 1 : 0)
            }
            if let percent = power.state.batteryPercent { gauge("scmesh_battery_percent", [], percent) }
        }
        gauge("scmesh_uptime_seconds", [], Int(status.uptimeSeconds))
        // Queue depths: frames in flight on each transport's links (sent, not yet acknowledged).
        var inFlight: [String: Int] = [:]
        for transport in status.transports { inFlight[transport.name] = 0 }
        for peer in peers.peers {
            for link in peer.links { inFlight[link.transport, default: 0] += link.inFlight }
        }
        for (transport, value) in inFlight { gauge("scmesh_link_frames_in_flight", [("transport", transport)], value) }
        // Links by the wire version their remote speaks (this node's own always listed).
        var byVersion: [Int: Int] = [Int(Frame.version): 0]
        for peer in peers.peers {
            for link in peer.links { byVersion[link.wireVersion, default: 0] += 1 }
        }
        for (version, value) in byVersion { gauge("scmesh_links", [("wire_version", String(version))], value) }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// `scmesh_messages_by_class_total{class, direction}`: what the router counts, by
    /// message class and direction (`sent`: handed to a next hop or written to links;
    /// `received`: taken from a link and accepted or judged).
    /// - `direct`: this node's own messages (sent: acknowledged by the next hop;
    ///   received: delivered to its inbox, whichever way they came);
    /// - `relayed`: messages for other nodes (received: taken into custody; sent:
    ///   handed to the next hop);
    /// - `receipt`: delivery receipts (sent: returned for messages this node received;
    ///   received: every receipt judged, accepted, rejected or ignored);
    /// - `topic`: topic gossip (sent: published here; received: valid messages seen
    ///   for the first time);
    /// - `announce`: route announcements (sent: written to links; received: accepted,
    ///   ignored or rejected).
    static func messageClasses(_ stats: RouterStats) -> [(String, String, Int)] {
        let receiptsJudged =
            stats.receiptsAccepted + stats.receiptsRejected.values.reduce(0, +)
            + stats.receiptsIgnored.values.reduce(0, +)
        let announcesJudged =
            stats.announcesAccepted + stats.announcesIgnored + stats.announcesRejected.values.reduce(0, +)
        return [
            ("direct", "sent", stats.messagesSent), ("direct", "received", stats.messagesReceived),
            ("relayed", "sent", stats.messagesRelayed), ("relayed", "received", stats.relayAccepted),
            ("receipt", "sent", stats.receiptsSent), ("receipt", "received", receiptsJudged),
            ("topic", "sent", stats.topics.published), ("topic", "received", stats.topics.accepted),
            ("announce", "sent", stats.announcesSent), ("announce", "received", announcesJudged),
        ]
    }

    /// Brings the counter `name{labels}` up to `total`.
    private func count(_ name: String, _ labels: [(String, String)], _ total: Int) {
        let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
        let delta = last.withLock { last -> Int in
            let previous = last[key]
            last[key] = total
            guard let previous else { return total }
            return total >= previous ? total - previous : total
        }
        let counter = Counter(label: name, dimensions: labels, factory: factory)
        counter.increment(by: delta)
    }

    private func gauge(_ name: String, _ labels: [(String, String)], _ value: Int) {
        Gauge(label: name, dimensions: labels, factory: factory).record(value)
    }
}
