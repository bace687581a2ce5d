import MeshCore

/// A stand-in for MeshCrypto's envelope sealer: "sealing" wraps the payload with the
/// recipient's and the sender's peer IDs, so a relay carries bytes it does not open
/// and only the recipient, checking the sender, unwraps them. (The real sealer is
/// tested end to end in MeshCryptoTests.)
struct TestSealer: MessageSealer {
    static let magic: [UInt8] = Array("SEAL".utf8)
    let peer: PeerID

    var overhead: Int { Self.magic.count + 64 }

    func seal(_ payload: [UInt8], to recipient: PeerID) throws -> [UInt8] {
        Self.magic + recipient.bytes + peer.bytes + payload
    }

    func open(_ sealed: [UInt8], from origin: PeerID) throws -> [UInt8] {
        guard sealed.count >= overhead, Array(sealed.prefix(4)) == Self.magic else {
            throw MeshError(.malformedFrame, "not a test envelope")
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
