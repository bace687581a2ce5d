/// Seals message payloads end to end, so relays see only the frame header.
///
/// The router seals a payload once, before chunking, and opens it once, after
/// reassembly; relays forward the sealed bytes unchanged. MeshCrypto's
/// `EnvelopeSealer` is the implementation a node uses.
public protocol MessageSealer: Sendable {
    /// Bytes sealing adds to a payload.
    var overhead: Int { get }
    /// Seals `payload` so that only `recipient` can read it and anyone can check it
    /// came from this node.
    func seal(_ payload: [UInt8], to recipient: PeerID) throws -> [UInt8]
    /// Opens a sealed payload that arrived from `origin`.
    /// - Throws: when it was not sealed for this node, not signed by `origin`, or
    ///   was changed on the way. The router drops such a message and counts it.
    func open(_ sealed: [UInt8], from origin: PeerID) throws -> [UInt8]
}
