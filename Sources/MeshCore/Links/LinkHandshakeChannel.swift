import Synchronization

/// Handshake messages over a link, through the packet framer.
final class LinkHandshakeChannel: HandshakeChannel {
    let link: any Link
    private let reassembler = Mutex(PacketReassembler())
    private let onFirstPacket: (@Sendable () -> Void)?
    private let heard = Atomic<Bool>(false)

    /// - Parameter onFirstPacket: called once, when the first packet arrives (the
    ///   remote is doing its part: the link manager evicts silent links before it).
    init(link: any Link, onFirstPacket: (@Sendable () -> Void)? = nil) {
        self.link = link
        self.onFirstPacket = onFirstPacket
    }

    func send(_ message: [UInt8]) async throws {
        for packet in try PacketFramer.packets(for: message, mtu: link.mtu) {
            try await link.send(packet)
        }
    }

    func receive() async throws -> [UInt8] {
        while true {
            guard let packet = try await link.receive() else {
                throw MeshError(.linkClosed, "link to \(link.remoteAddress) closed during the handshake")
            }
            if let onFirstPacket, !heard.exchange(true, ordering: .relaxed) { onFirstPacket() }
            let output = try reassembler.withLock { reassembler throws(MeshError) in try reassembler.feed(packet) }
            if case .segment(let segment) = output { return segment }
        }
    }
}
