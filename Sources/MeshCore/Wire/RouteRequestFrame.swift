/// A route request (frame type 9): "I have messages for `target` and no route I may
/// use; send me a route of at least `sequence`". Not signed: the worst a forged one
/// can make happen is a re-sent announcement, or the target announcing itself anew,
/// both within the link's announcement budget. Rules in `docs/PROTOCOL.md` §A.5,
/// "Route requests" (Babel's seqno request, RFC 8966 §3.8.2, with hop counts).
package struct RouteRequestFrame: Sendable, Hashable {
    /// The node a route is wanted to.
    package var target: PeerID
    /// The oldest sequence of the target's announcements that helps the requester:
    /// one above the highest it holds (a feasible route at that sequence is what it
    /// lacks), or 0 when it holds none (any route helps).
    package var sequence: UInt64
    /// How many more hops the request may be forwarded toward the target (at most
    /// `routing.max_hops`; a request with 1 is answered but not forwarded).
    package var hopLimit: UInt8

    /// Body bytes after the 4-byte frame header: target, sequence, hop limit.
    package static let bodySize = 32 + 8 + 1

    /// Creates a route request.
    package init(target: PeerID, sequence: UInt64, hopLimit: UInt8) {
        self.target = target
        self.sequence = sequence
        self.hopLimit = hopLimit
    }

    /// The same request one hop further toward the target.
    package func forwarded() -> RouteRequestFrame {
        RouteRequestFrame(target: target, sequence: sequence, hopLimit: hopLimit &- 1)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(contentsOf: target.bytes)
        writer.write(sequence)
        writer.write(hopLimit)
    }

    static func read(from reader: inout ByteReader) throws(MeshError) -> RouteRequestFrame {
        let target = try PeerID(bytes: reader.readBytes(32, field: "target"))
        let sequence = try reader.readInteger(UInt64.self, field: "sequence")
        let hopLimit = try reader.readInteger(UInt8.self, field: "hop limit")
        guard reader.remaining == 0 else {
            throw MeshError(.malformedFrame, "route request frame: \(reader.remaining) trailing bytes")
        }
        guard hopLimit >= 1 else { throw MeshError(.malformedFrame, "route request frame: hop limit 0") }
        return RouteRequestFrame(target: target, sequence: sequence, hopLimit: hopLimit)
    }
}
