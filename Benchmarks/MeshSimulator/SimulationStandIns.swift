import MeshCore

/// A cheap stand-in for MeshCrypto's envelope sealer in simulations: "sealing" wraps
/// the payload with the recipient's and the sender's peer IDs, so a relay carries
/// bytes it does not open and the recipient checks both. It protects nothing; the
/// real sealer's cost is measured by `MeshBench crypto`.
public struct SimulationSealer: MessageSealer {
    static let magic: [UInt8] = Array("SIMS".utf8)
    /// The node this sealer belongs to.
    public let peer: PeerID

    /// Creates the stand-in for `peer`.
    public init(peer: PeerID) {
        self.peer = peer
    }

    public var overhead: Int { Self.magic.count + 64 }

    public func seal(_ payload: [UInt8], to recipient: PeerID) throws -> [UInt8] {
        Self.magic + recipient.bytes + peer.bytes + payload
    }

    public func open(_ sealed: [UInt8], from origin: PeerID) throws -> [UInt8] {
        guard sealed.count >= overhead, Array(sealed.prefix(4)) == Self.magic else {
            throw MeshError(.malformedFrame, "not a simulation envelope (\(sealed.count) bytes)")
        }
        guard Array(sealed[4..<36]) == peer.bytes else {
            throw MeshError(.invalidArgument, "sealed for another recipient")
        }
        guard Array(sealed[36..<68]) == origin.bytes else {
            throw MeshError(.invalidArgument, "sealed by another sender")
        }
        return Array(sealed[68...])
    }
}

/// A cheap stand-in for MeshCrypto's identity signer in simulations (receipts and
/// route announcements): 32-byte FNV-1a digests, and a "signature" that is a digest of
/// the signer's peer ID with the bytes. Anyone can forge it; it keeps the sizes and
/// the checks of the real one at a fraction of the cost.
public struct SimulationSigner: ReceiptSigner {
    /// The node this signer belongs to.
    public let peer: PeerID

    /// Creates the stand-in for `peer`.
    public init(peer: PeerID) {
        self.peer = peer
    }

    public func digest(_ bytes: [UInt8]) -> [UInt8] {
        Self.fnv(bytes, lanes: 4)
    }

    public func sign(_ bytes: [UInt8]) -> [UInt8] {
        Self.signature(of: bytes, by: peer)
    }

    public func verify(_ signature: [UInt8], of bytes: [UInt8], by peer: PeerID) -> Bool {
        signature == Self.signature(of: bytes, by: peer)
    }

    static func signature(of bytes: [UInt8], by peer: PeerID) -> [UInt8] {
        fnv(peer.bytes + bytes, lanes: 8)
    }

    /// FNV-1a over `bytes`, once per lane (each lane seeded differently), 8 bytes a lane.
    static func fnv(_ bytes: [UInt8], lanes: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(lanes * 8)
        for lane in 0..<lanes {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(lane)
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            withUnsafeBytes(of: hash.bigEndian) { out.append(contentsOf: $0) }
        }
        return out
    }
}
