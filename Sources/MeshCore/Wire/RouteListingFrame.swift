/// A route listing (frame type 11): the answer to a ``RouteSummaryFrame`` whose buckets
/// differ from the receiver's. It names the buckets it covers and lists every (origin,
/// highest sequence) pair the lister holds in them; the summary's sender then sends
/// the lister its route for every origin of those buckets the listing lacks or lists
/// at a lower sequence. Rules in `docs/PROTOCOL.md` §A.5, "Route summaries".
package struct RouteListingFrame: Sendable, Hashable {
    /// The summary's bucket bits, which the buckets below refer to (0…8).
    package var bucketBits: UInt8
    /// The buckets listed whole, in increasing order.
    package var buckets: [Int]
    /// The lister's pairs in those buckets.
    package var pairs: [Pair]

    /// One origin and the highest sequence of its announcements the lister holds.
    package struct Pair: Sendable, Hashable {
        /// The origin.
        package var origin: PeerID
        /// Its highest sequence held.
        package var sequence: UInt64

        /// Creates a pair.
        package init(origin: PeerID, sequence: UInt64) {
            self.origin = origin
            self.sequence = sequence
        }
    }

    /// The most pairs one listing carries (40 bytes each: 60,000 bytes); a lister with
    /// more in the buckets asked for lists the first buckets whole and leaves the rest
    /// to the next summary.
    package static let maxPairs = 1_500

    /// Creates a listing.
    package init(bucketBits: UInt8, buckets: [Int], pairs: [Pair]) {
        self.bucketBits = bucketBits
        self.buckets = buckets
        self.pairs = pairs
    }

    /// The bitmap's length: one bit per bucket, at least one byte.
    private static func bitmapBytes(_ bits: UInt8) -> Int { max(1, (1 << Int(bits)) / 8) }

    /// Encoded body size after the 4-byte frame header.
    var bodySize: Int { 1 + Self.bitmapBytes(bucketBits) + 2 + 40 * pairs.count }

    func write(to writer: inout ByteWriter) {
        writer.write(bucketBits)
        var bitmap = [UInt8](repeating: 0, count: Self.bitmapBytes(bucketBits))
        for bucket in buckets { bitmap[bucket / 8] |= 0x80 >> UInt8(bucket % 8) }
        writer.write(contentsOf: bitmap)
        writer.write(UInt16(pairs.count))
        for pair in pairs {
            writer.write(contentsOf: pair.origin.bytes)
            writer.write(pair.sequence)
        }
    }

    static func read(from reader: inout ByteReader) throws(MeshError) -> RouteListingFrame {
        let bits = try reader.readInteger(UInt8.self, field: "bucket bits")
        guard bits <= RouteSummaryFrame.maxBucketBits else {
            throw MeshError(
                .malformedFrame,
                "route listing frame: \(bits) bucket bits (at most \(RouteSummaryFrame.maxBucketBits))"
            )
        }
        let bitmap = Array(try reader.readBytes(bitmapBytes(bits), field: "bucket bitmap"))
        let bucketCount = 1 << Int(bits)
        var buckets: [Int] = []
        for index in 0..<(bitmap.count * 8) where bitmap[index / 8] & (0x80 >> UInt8(index % 8)) != 0 {
            guard index < bucketCount else {
                throw MeshError(
                    .malformedFrame,
                    "route listing frame: bucket \(index) set, but there are \(bucketCount)"
                )
            }
            buckets.append(index)
        }
        let count = Int(try reader.readInteger(UInt16.self, field: "pair count"))
        guard count <= maxPairs else {
            throw MeshError(.malformedFrame, "route listing frame: \(count) pairs (at most \(maxPairs))")
        }
        guard reader.remaining == 40 * count else {
            throw MeshError(
                .malformedFrame,
                "route listing frame: \(count) pairs need \(40 * count) bytes, \(reader.remaining) follow"
            )
        }
        var pairs: [Pair] = []
        pairs.reserveCapacity(count)
        for _ in 0..<count {
            let origin = try PeerID(bytes: reader.readBytes(32, field: "origin"))
            let sequence = try reader.readInteger(UInt64.self, field: "sequence")
            let bucket = RouteSummaryFrame.bucket(of: origin, bits: bits)
            guard bitmap[bucket / 8] & (0x80 >> UInt8(bucket % 8)) != 0 else {
                throw MeshError(
                    .malformedFrame,
                    "route listing frame: origin \(origin) is in a bucket the listing does not cover"
                )
            }
            pairs.append(Pair(origin: origin, sequence: sequence))
        }
        return RouteListingFrame(bucketBits: bits, buckets: buckets, pairs: pairs)
    }
}
