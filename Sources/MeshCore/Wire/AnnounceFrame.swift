/// A route announcement (frame type 5): "`origin` can be reached through me in `hops`
/// hops". The origin signs its peer ID and a sequence number it increases with every
/// announcement it makes; relays re-send the announcement unchanged but for the hop
/// count and the ``solicited`` flag, which are not signed. Layout and rules in
/// `docs/PROTOCOL.md` §A.2 and §A.5.
package struct AnnounceFrame: Sendable, Hashable {
    /// The node the announcement is about (and signed by).
    package var origin: PeerID
    /// The origin's announcement counter: higher is newer.
    package var sequence: UInt64
    /// Hops from the receiver to the origin through the sender (1 when the sender is
    /// the origin). Not signed.
    package var hops: UInt8
    /// The origin's 64-byte signature over ``signedBytes(origin:sequence:)``.
    package var signature: [UInt8]
    /// The frame header's solicited flag (``solicitedFlag``): the origin announced
    /// this sequence because a route request asked for it, so relays pass it back
    /// toward the requesters and where it changes a route, not to every neighbour
    /// (docs/PROTOCOL.md §A.5, "Route requests"). Not signed.
    package var solicited: Bool

    /// The ANNOUNCE flag bit that carries ``solicited``.
    package static let solicitedFlag: UInt16 = 0x0001

    /// Body bytes after the 4-byte frame header: origin, sequence, hops, signature.
    package static let bodySize = 32 + 8 + 1 + 64
    /// Domain separation for the signed bytes (18 ASCII bytes).
    package static let domain = Array("SCMesh announce v1".utf8)

    /// Creates an announcement.
    package init(origin: PeerID, sequence: UInt64, hops: UInt8, signature: [UInt8], solicited: Bool = false) {
        self.origin = origin
        self.sequence = sequence
        self.hops = hops
        self.signature = signature
        self.solicited = solicited
    }

    /// The frame header's flags for this announcement.
    var flags: UInt16 { solicited ? Self.solicitedFlag : 0 }

    /// The bytes the origin signs: the domain, its peer ID, the sequence (u64,
    /// big-endian).
    package static func signedBytes(origin: PeerID, sequence: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: domain.count + 40)
        writer.write(contentsOf: domain)
        writer.write(contentsOf: origin.bytes)
        writer.write(sequence)
        return writer.bytes
    }

    /// Makes and signs this node's own announcement.
    package static func originate(sequence: UInt64, signer: any ReceiptSigner, origin: PeerID) -> AnnounceFrame {
        AnnounceFrame(
            origin: origin,
            sequence: sequence,
            hops: 1,
            signature: signer.sign(signedBytes(origin: origin, sequence: sequence))
        )
    }

    /// Whether the origin's signature verifies.
    package func verify(with signer: any ReceiptSigner) -> Bool {
        signature.count == 64
            && signer.verify(signature, of: Self.signedBytes(origin: origin, sequence: sequence), by: origin)
    }

    /// The same announcement one hop further away (the solicited flag kept).
    package func forwarded() -> AnnounceFrame {
        AnnounceFrame(origin: origin, sequence: sequence, hops: hops &+ 1, signature: signature, solicited: solicited)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(contentsOf: origin.bytes)
        writer.write(sequence)
        writer.write(hops)
        writer.write(contentsOf: signature)
    }

    /// Reads the body; of the header's `flags`, only ``solicitedFlag`` means anything
    /// (the others are ignored).
    static func read(from reader: inout ByteReader, flags: UInt16) throws(MeshError) -> AnnounceFrame {
        let origin = try PeerID(bytes: reader.readBytes(32, field: "origin"))
        let sequence = try reader.readInteger(UInt64.self, field: "sequence")
        let hops = try reader.readInteger(UInt8.self, field: "hops")
        let signature = Array(try reader.readBytes(64, field: "signature"))
        guard reader.remaining == 0 else {
            throw MeshError(.malformedFrame, "announce frame: \(reader.remaining) trailing bytes")
        }
        return AnnounceFrame(
            origin: origin,
            sequence: sequence,
            hops: hops,
            signature: signature,
            solicited: flags & solicitedFlag != 0
        )
    }
}
