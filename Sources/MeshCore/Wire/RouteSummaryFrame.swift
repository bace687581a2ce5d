/// A route summary (frame type 10): what the sender's route table holds, as one 64-bit
/// hash per bucket of origins. A neighbour holding the same (origin, highest sequence)
/// pairs computes the same hashes and has nothing to say; where a bucket differs it
/// answers with a ``RouteListingFrame`` of that bucket, and the sender then sends the
/// announcements the neighbour lacks. Anti-entropy for announcements: a lost
/// announcement is repaired at the next summary, and a link that comes up again costs a
/// summary instead of the whole table. Not signed (it carries no route; the
/// announcements it leads to are). Rules in `docs/PROTOCOL.md` §A.5, "Route summaries".
package struct RouteSummaryFrame: Sendable, Hashable {
    /// Origins fall into 2^`bucketBits` buckets by the top bits of their first byte (0…8).
    package var bucketBits: UInt8
    /// One hash per bucket: the XOR of ``entryHash(origin:sequence:)`` over the bucket's
    /// pairs (0 for an empty bucket).
    package var hashes: [UInt64]

    /// The most bucket bits (256 buckets: 2,048 bytes of hashes).
    package static let maxBucketBits: UInt8 = 8

    /// Creates a summary; `hashes` has 2^`bucketBits` entries.
    package init(bucketBits: UInt8, hashes: [UInt64]) {
        precondition(bucketBits <= Self.maxBucketBits && hashes.count == 1 << Int(bucketBits))
        self.bucketBits = bucketBits
        self.hashes = hashes
    }

    /// The summary of `pairs` in 2^`bucketBits` buckets.
    package init(bucketBits: UInt8, pairs: some Sequence<(origin: PeerID, sequence: UInt64)>) {
        var hashes = [UInt64](repeating: 0, count: 1 << Int(bucketBits))
        for pair in pairs {
            hashes[Self.bucket(of: pair.origin, bits: bucketBits)] ^= Self.entryHash(
                origin: pair.origin,
                sequence: pair.sequence
            )
        }
        self.init(bucketBits: bucketBits, hashes: hashes)
    }

    /// The bucket bits for a table of `count` pairs: about 4 origins a bucket, 1 to 256
    /// buckets.
    package static func bucketBits(for count: Int) -> UInt8 {
        var bits: UInt8 = 0
        while bits < maxBucketBits, (1 << Int(bits)) * 4 < count { bits += 1 }
        return bits
    }

    /// The bucket of `origin`: the top `bits` bits of its first byte.
    package static func bucket(of origin: PeerID, bits: UInt8) -> Int {
        bits == 0 ? 0 : Int(origin.bytes[0] >> (8 - bits))
    }

    /// The hash of one pair: 64-bit FNV-1a over the origin's 32 bytes and the sequence's
    /// 8 big-endian bytes, then the SplitMix64 finalizer (docs/PROTOCOL.md §A.5).
    package static func entryHash(origin: PeerID, sequence: UInt64) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in origin.bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        for shift in stride(from: 56, through: 0, by: -8) {
            hash = (hash ^ ((sequence >> UInt64(shift)) & 0xFF)) &* 0x0000_0100_0000_01b3
        }
        hash = (hash ^ (hash >> 30)) &* 0xbf58_476d_1ce4_e5b9
        hash = (hash ^ (hash >> 27)) &* 0x94d0_49bb_1331_11eb
        return hash ^ (hash >> 31)
    }

    /// Encoded body size after the 4-byte frame header.
    var bodySize: Int { 1 + 8 * hashes.count }

    func write(to writer: inout ByteWriter) {
        writer.write(bucketBits)
        for hash in hashes { writer.write(hash) }
    }

    static func read(from reader: inout ByteReader) throws(MeshError) -> RouteSummaryFrame {
        let bits = try reader.readInteger(UInt8.self, field: "bucket bits")
        guard bits <= maxBucketBits else {
            throw MeshError(.malformedFrame, "route summary frame: \(bits) bucket bits (at most \(maxBucketBits))")
        }
        let count = 1 << Int(bits)
        guard reader.remaining == 8 * count else {
            throw MeshError(
                .malformedFrame,
                "route summary frame: \(count) buckets need \(8 * count) bytes, \(reader.remaining) follow"
            )
        }
        var hashes: [UInt64] = []
        hashes.reserveCapacity(count)
        for _ in 0..<count { hashes.append(try reader.readInteger(UInt64.self, field: "bucket hash")) }
        return RouteSummaryFrame(bucketBits: bits, hashes: hashes)
    }
}
