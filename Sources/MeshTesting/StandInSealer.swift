import MeshCore

/// A cheap stand-in for MeshCrypto's envelope sealer, for tests and simulations:
/// "sealing" wraps the payload with the recipient's and the sender's peer IDs, so a
/// relay carries bytes it does not open and the recipient checks both. It protects
/// nothing. The real sealer is tested end to end in MeshCryptoTests, and its cost is
/// measured by `MeshBench crypto`.
public struct StandInSealer: MessageSealer {
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
            throw MeshError(.malformedFrame, "not a stand-in envelope (\(sealed.count) bytes)")
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
