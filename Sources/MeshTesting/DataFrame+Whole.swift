import MeshCore

extension DataFrame {
    /// A DATA frame that carries a whole message in one chunk (chunk 0 of 1): what a
    /// test peer sends when chunking is not what it tests.
    package static func whole(
        sequence: UInt32,
        messageID: MessageID = .random(),
        origin: PeerID,
        destination: PeerID,
        ttl: UInt8 = 7,
        flags: UInt16 = 0,
        payload: [UInt8]
    ) -> DataFrame {
        DataFrame(
            sequence: sequence,
            messageID: messageID,
            origin: origin,
            destination: destination,
            ttl: ttl,
            chunkIndex: 0,
            chunkCount: 1,
            messageLength: UInt32(payload.count),
            flags: flags,
            payload: payload
        )
    }
}
