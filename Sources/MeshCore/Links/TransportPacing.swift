/// How eagerly the node looks for peers and makes itself seen, how often it checks
/// idle links and compares routes with its neighbours: what a power profile sets at
/// run time (``Router/setPacing(_:)``).
///
/// Every field is optional: nil keeps the value the transport or the router was
/// configured with. A transport applies the fields that mean something to its medium
/// (``Transport/apply(_:)``) and ignores the rest.
public struct TransportPacing: Sendable, Hashable {
    /// How often a radio scan starts (a BLE LE scan interval).
    public var scanInterval: Duration?
    /// How long each scan listens (a BLE LE scan window); never more than the interval.
    public var scanWindow: Duration?
    /// The time between advertisements (BLE).
    public var advertisingInterval: Duration?
    /// The transmit power asked for advertisements, in dBm (BLE).
    public var transmitPowerDBm: Int?
    /// How often an idle link is pinged; a link silent for three times this is dead.
    /// Applied by the router, never lower than its configured `keepalive_interval_ms`.
    public var keepaliveInterval: Duration?
    /// How often a transport that finds peers by asking the network (mDNS) looks: it
    /// browses for a short window once per interval instead of all the time; nil
    /// browses continuously.
    public var browseInterval: Duration?
    /// The base interval of the route summaries sent to each neighbour. Applied by the
    /// router, never lower than its configured `summary_interval_ms`.
    public var routeSummaryInterval: Duration?
    /// The topic gossip's heartbeat interval (mesh upkeep, IHAVE gossip). Applied by
    /// the router, never lower than its configured `heartbeat_interval_ms`.
    public var topicHeartbeatInterval: Duration?

    /// Pacing with the given values; nil keeps the configured one.
    public init(
        scanInterval: Duration? = nil,
        scanWindow: Duration? = nil,
        advertisingInterval: Duration? = nil,
        transmitPowerDBm: Int? = nil,
        keepaliveInterval: Duration? = nil,
        browseInterval: Duration? = nil,
        routeSummaryInterval: Duration? = nil,
        topicHeartbeatInterval: Duration? = nil
    ) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.advertisingInterval = advertisingInterval
        self.transmitPowerDBm = transmitPowerDBm
        self.keepaliveInterval = keepaliveInterval
        self.browseInterval = browseInterval
        self.routeSummaryInterval = routeSummaryInterval
        self.topicHeartbeatInterval = topicHeartbeatInterval
    }

    /// The configured values everywhere.
    public static let configured = TransportPacing()
}
