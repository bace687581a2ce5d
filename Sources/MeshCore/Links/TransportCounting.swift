/// A transport that counts what remotes made it refuse or drop (connections over a
/// limit, links closed on malformed input), for status output. Optional: the node
/// shows the counters of every transport that conforms.
public protocol TransportCounting: Sendable {
    /// Counts by kind (`refused.max_inbound`, `link_closed.malformedFrame`, ...),
    /// since the transport started listening.
    var counters: [String: Int] { get }
}
