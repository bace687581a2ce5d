import MeshCore

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
