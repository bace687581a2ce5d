import Synchronization

/// Handshake messages over a link, through the packet framer.
final class LinkHandshakeChannel: HandshakeChannel {
    let link: any Link
    private let reassembler = Mutex(PacketReassembler())

    init(link: any Link) {
        self.link = link
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
            let output = try reassembler.withLock { reassembler throws(MeshError) in try reassembler.feed(packet) }
            if case .segment(let segment) = output { return segment }
        }
    }
}
