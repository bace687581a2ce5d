/// Route announcements and the route table (`routing:` in `Config/node.yaml`).
///
/// Keys: `announce_interval_ms`, `announce_jitter` (0…1), `max_hops` (1…255),
/// `route_max_age_ms`, `announces_per_second`, `announce_burst`, `control_share`
/// (0…1, the share of a link's nominal bitrate announcements may use),
/// `summary_interval_ms` (0: no route summaries), `hop_counts`. A missing key
/// takes its default; an unknown key, a wrong type or a value out of range is a
/// `DecodingError` whose coding path ends with the key.
public struct RoutingConfiguration: Sendable, Hashable, Codable {
    /// How often a node announces itself.
    public var announceInterval: Duration
    /// Each interval is drawn from `announceInterval × (1 ± announceJitter)`.
    public var announceJitter: Double
    /// The longest route accepted or re-announced, in hops (= the default TTL).
    public var maxHops: UInt8
    /// A route not refreshed by a newer announcement for this long is dropped.
    public var routeMaxAge: Duration
    /// Announcements one link carries per second at most (the token rate).
    public var announcesPerSecond: Double
    /// Announcements one link may carry at once (the token bucket's depth).
    public var announceBurst: Int
    /// The share of a link's nominal bitrate announcements may use (0.02 = 2 %): on a
    /// slow link the rate is lowered below ``announcesPerSecond`` to fit.
    public var controlShare: Double
    /// How often a node sends each neighbour a route summary (anti-entropy: what an
    /// announcement lost on the way missed is sent again); zero sends none.
    public var summaryInterval: Duration
    /// The sequence number of this node's first announcement (not a config key). A
    /// node sets it from the wall clock (milliseconds since 1970, shifted left by 20
    /// bits), so that a restarted node's announcements are always newer than the ones
    /// it sent before the restart and are not taken for stale replays. nil draws a
    /// random start, which after a restart is older than the last run's half the time:
    /// then its routes are refused until the old ones age out (`route_max_age_ms`).
    public var firstSequence: UInt64?
    /// Whether a node sends a neighbour whose route summary matched its table the hop
    /// counts of its routes, at the first two such summaries, and answers such a frame
    /// with its routes that are shorter (config key `hop_counts`, default true;
    /// docs/PROTOCOL.md §A.5): summaries compare sequences only, so without them a
    /// route stretched by a lost announcement stays stretched until its origin's next
    /// sequence. false sends none and ignores a neighbour's: fewer routing bytes on
    /// slow links while a large mesh settles, for routes a few per cent longer.
    public var hopCounts: Bool

    /// Defaults: every 3600 s ± 25 %, 7 hops, routes kept 12,000 s, 10 announcements
    /// per second and link (burst 32), at most 2 % of a link's bitrate, a route summary
    /// to each neighbour every 60 s ± 25 %, hop counts on. Route summaries, route
    /// requests and link-up digests repair routes between two refreshes, so the
    /// refresh can be rare.
    public init(
        announceInterval: Duration = .seconds(3600),
        announceJitter: Double = 0.25,
        maxHops: UInt8 = 7,
        routeMaxAge: Duration = .seconds(12_000),
        announcesPerSecond: Double = 10,
        announceBurst: Int = 32,
        controlShare: Double = 0.02,
        summaryInterval: Duration = .seconds(60),
        hopCounts: Bool = true
    ) {
        self.hopCounts = hopCounts
        self.summaryInterval = summaryInterval
        self.announceInterval = announceInterval
        self.announceJitter = announceJitter
        self.maxHops = maxHops
        self.routeMaxAge = routeMaxAge
        self.announcesPerSecond = announcesPerSecond
        self.announceBurst = announceBurst
        self.controlShare = controlShare
    }

    /// The outbound announcement rate for a link of `capabilities`: the configured
    /// rate, lowered so that announcements (≈ 140 bytes on the wire each) use at most
    /// ``controlShare`` of its nominal bitrate; at least one per minute.
    func announceRate(for capabilities: TransportCapabilities) -> Double {
        var rate = announcesPerSecond
        if capabilities.nominalBitrate > 0 {
            rate = min(rate, Double(capabilities.nominalBitrate) * controlShare / Double(Self.wireBits))
        }
        return max(rate, 1.0 / 60)
    }

    /// The share of ``announcesPerSecond`` that periodic refreshes may fill: every
    /// origin's refresh crosses every link once, so a node that knows `n` origins
    /// refreshes no more often than every `n / (announcesPerSecond × refreshShare)`
    /// seconds, leaving the rest of each link's budget to triggered announcements
    /// (new links, better routes).
    static let refreshShare = 0.5

    /// How often a node that holds routes to `origins` other nodes announces itself:
    /// ``announceInterval``, stretched when the network is so large that every
    /// origin's refresh crossing every link would use more than ``refreshShare`` of
    /// ``announcesPerSecond`` (at 10 a second and the default 3600 s: from 18,000
    /// origins on; 20,000 origins → 4000 s). Every node of a mesh sees about the same number of origins, so they
    /// stretch alike.
    package func refreshInterval(origins: Int) -> Duration {
        let floor = Double(origins) / (announcesPerSecond * Self.refreshShare)
        return floor > PriorityEscalationPolicy.seconds(announceInterval)
            ? .milliseconds(Int64(floor * 1000)) : announceInterval
    }

    /// How long a route lives unrefreshed in a table of `origins` entries:
    /// ``routeMaxAge`` stretched by the same factor as ``refreshInterval(origins:)``.
    package func routeMaxAge(origins: Int) -> Duration {
        let interval = refreshInterval(origins: origins)
        guard interval > announceInterval else { return routeMaxAge }
        return routeMaxAge * (interval / announceInterval)
    }

    /// Bits one announcement takes on a link: the frame, the cipher's tag, a packet
    /// flag and a 2-byte length prefix, rounded up.
    static let wireBits = 140 * 8

    enum CodingKeys: String, CodingKey, CaseIterable {
        case announceIntervalMs = "announce_interval_ms"
        case announceJitter = "announce_jitter"
        case maxHops = "max_hops"
        case routeMaxAgeMs = "route_max_age_ms"
        case announcesPerSecond = "announces_per_second"
        case announceBurst = "announce_burst"
        case controlShare = "control_share"
        case summaryIntervalMs = "summary_interval_ms"
        case hopCounts = "hop_counts"
    }

    /// Decodes the config keys; ``firstSequence`` keeps its default.
    public init(from decoder: any Decoder) throws {
        try decoder.rejectUnknownKeys(CodingKeys.self, section: "routing")
        self.init()
        let defaults = self
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let interval = try container.decode(
            Int.self,
            forKey: .announceIntervalMs,
            default: defaults.announceInterval.wholeMilliseconds
        )
        try container.check(interval >= 1, .announceIntervalMs, "must be at least 1, got \(interval)")
        announceInterval = .milliseconds(interval)
        announceJitter = try container.decode(Double.self, forKey: .announceJitter, default: defaults.announceJitter)
        try container.check(
            (0...1).contains(announceJitter),
            .announceJitter,
            "must be between 0 and 1, got \(announceJitter)"
        )
        let hops = try container.decode(Int.self, forKey: .maxHops, default: Int(defaults.maxHops))
        try container.check((1...255).contains(hops), .maxHops, "must be between 1 and 255, got \(hops)")
        maxHops = UInt8(hops)
        let age = try container.decode(
            Int.self,
            forKey: .routeMaxAgeMs,
            default: defaults.routeMaxAge.wholeMilliseconds
        )
        try container.check(
            age >= interval,
            .routeMaxAgeMs,
            "must be at least announce_interval_ms (\(interval)), got \(age)"
        )
        routeMaxAge = .milliseconds(age)
        announcesPerSecond = try container.decode(
            Double.self,
            forKey: .announcesPerSecond,
            default: defaults.announcesPerSecond
        )
        try container.check(announcesPerSecond > 0, .announcesPerSecond, "must be above 0, got \(announcesPerSecond)")
        announceBurst = try container.decode(Int.self, forKey: .announceBurst, default: defaults.announceBurst)
        try container.check(announceBurst >= 1, .announceBurst, "must be at least 1, got \(announceBurst)")
        controlShare = try container.decode(Double.self, forKey: .controlShare, default: defaults.controlShare)
        try container.check(
            controlShare > 0 && controlShare <= 1,
            .controlShare,
            "must be above 0 and at most 1, got \(controlShare)"
        )
        let summary = try container.decode(
            Int.self,
            forKey: .summaryIntervalMs,
            default: defaults.summaryInterval.wholeMilliseconds
        )
        try container.check(summary >= 0, .summaryIntervalMs, "must be 0 (no summaries) or more, got \(summary)")
        summaryInterval = .milliseconds(summary)
        hopCounts = try container.decode(Bool.self, forKey: .hopCounts, default: defaults.hopCounts)
    }

    /// Encodes the config keys (``firstSequence`` is not one).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(announceInterval.wholeMilliseconds, forKey: .announceIntervalMs)
        try container.encode(announceJitter, forKey: .announceJitter)
        try container.encode(Int(maxHops), forKey: .maxHops)
        try container.encode(routeMaxAge.wholeMilliseconds, forKey: .routeMaxAgeMs)
        try container.encode(announcesPerSecond, forKey: .announcesPerSecond)
        try container.encode(announceBurst, forKey: .announceBurst)
        try container.encode(controlShare, forKey: .controlShare)
        try container.encode(summaryInterval.wholeMilliseconds, forKey: .summaryIntervalMs)
        try container.encode(hopCounts, forKey: .hopCounts)
    }
}
