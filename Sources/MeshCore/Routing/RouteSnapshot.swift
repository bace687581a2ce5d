/// One row of the route table (`scmesh routes`): how this node reaches a destination.
public struct RouteSnapshot: Sendable, Hashable, Codable {
    /// The node the route leads to.
    public var destination: PeerID
    /// The neighbour messages to `destination` are handed to (the destination itself
    /// for a direct link).
    public var nextHop: PeerID
    /// Hops to the destination (1 for a direct link).
    public var hops: Int
    /// The destination's announcement sequence the route rests on; nil for a direct
    /// link no announcement has confirmed yet.
    public var sequence: UInt64?
    /// Milliseconds since the route was last confirmed (0 for a direct link).
    public var ageMilliseconds: Int
    /// The transport of the best link to the next hop.
    public var transport: String

    /// Creates a snapshot row.
    public init(
        destination: PeerID,
        nextHop: PeerID,
        hops: Int,
        sequence: UInt64?,
        ageMilliseconds: Int,
        transport: String
    ) {
        self.destination = destination
        self.nextHop = nextHop
        self.hops = hops
        self.sequence = sequence
        self.ageMilliseconds = ageMilliseconds
        self.transport = transport
    }
}
