extension DeliveryPipeline {
    /// Seals `payload` for `peer` in the format it opens (docs/PROTOCOL.md §B.3):
    /// format 2, bound to the frame's ID, flags and a creation time, unless this node
    /// does not speak it or `peer`'s most recent link handshake with this node announced
    /// no `sealed_v2` (an earlier release, or a minimal implementation): then format 1,
    /// the only one such a peer opens. A peer this node never linked to gets format 2.
    func seal(
        _ payload: [UInt8],
        with sealer: any MessageSealer,
        to peer: PeerID,
        binding: SealBinding
    ) throws -> [UInt8] {
        if configuration.features.contains(.sealedV2), table.formats.speaksFormatTwo(peer) != false {
            return try sealer.seal(payload, to: peer, binding: binding)
        }
        return try sealer.seal(payload, to: peer)
    }
}
