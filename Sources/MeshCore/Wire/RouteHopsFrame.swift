/// Route hops (frame type 12): the hop count of the sender's route to every origin its
/// route summary covers, sent to a neighbour whose summary matched the sender's table
/// (both then hold the same origins, so the counts need no origin IDs: one byte each,
/// in ascending order of origin). The neighbour sends back its own route wherever it is
/// at least two hops shorter, which summaries cannot see: they compare sequences, not
/// hop counts. Not signed (it carries no route; the announcements it leads to are).
/// Rules in `docs/PROTOCOL.md` §A.5, "Route summaries", *Hop counts*.
package struct RouteHopsFrame: Sendable, Hashable {
    /// The hash of the sender's (origin, sequence) pairs: what its summary of 0 bucket
    /// bits carries. A receiver whose own differs ignores the frame.
    package var digest: UInt64
    /// One hop count per pair, in ascending order of origin (bytewise): 0 for the
    /// sender itself, ``noRoute`` where it has no usable route.
    package var hops: [UInt8]

    /// The hop count of an origin the sender has no usable route to.
    package static let noRoute: UInt8 = 255
    /// The most pairs one frame carries (a table with more sends none).
    package static let maxPairs = 60_000

    /// Creates a frame; at most ``maxPairs`` hop counts.
    package init(digest: UInt64, hops: [UInt8]) {
        precondition(hops.count <= Self.maxPairs)
        self.digest = digest
        self.hops = hops
    }

    /// Encoded body size after the 4-byte frame header.
    var bodySize: Int { 8 + 2 + hops.count }

    func write(to writer: inout ByteWriter) {
        writer.write(digest)
        writer.write(UInt16(hops.count))
        writer.write(contentsOf: hops)
    }

    static func read(from reader: inout ByteReader) throws(MeshError) -> RouteHopsFrame {
        let digest = try reader.readInteger(UInt64.self, field: "digest")
        let count = Int(try reader.readInteger(UInt16.self, field: "pair count"))
        guard count <= maxPairs else {
            throw MeshError(.malformedFrame, "route hops frame: \(count) pairs (at most \(maxPairs))")
        }
        guard reader.remaining == count else {
            throw MeshError(
                .malformedFrame,
                "route hops frame: \(count) pairs need \(count) bytes, \(reader.remaining) follow"
            )
        }
        return RouteHopsFrame(digest: digest, hops: Array(try reader.readBytes(count, field: "hop counts")))
    }
}
