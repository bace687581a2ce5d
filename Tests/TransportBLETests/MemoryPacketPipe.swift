import MeshCore
import Synchronization

/// Two packet ``Link``s joined in memory: what one sends, the other receives, one
/// packet at a time (an ATT bearer without Bluetooth). Closing either end ends both.
final class MemoryPacketLink: Link, Sendable {
    let remoteAddress: String
    let mtu: Int
    private let inbound: BoundedChannel<[UInt8]>
    private let outbound: BoundedChannel<[UInt8]>
    /// Every packet this end sent, in order (for assertions).
    let sent = Mutex<[[UInt8]]>([])

    private init(remoteAddress: String, mtu: Int, inbound: BoundedChannel<[UInt8]>, outbound: BoundedChannel<[UInt8]>) {
        self.remoteAddress = remoteAddress
        self.mtu = mtu
        self.inbound = inbound
        self.outbound = outbound
    }

    /// A joined pair (a, b).
    static func pair(mtu: Int = 672) -> (MemoryPacketLink, MemoryPacketLink) {
        let aToB = BoundedChannel<[UInt8]>(capacity: 16)
        let bToA = BoundedChannel<[UInt8]>(capacity: 16)
        return (
            MemoryPacketLink(remoteAddress: "memory-b", mtu: mtu, inbound: bToA, outbound: aToB),
            MemoryPacketLink(remoteAddress: "memory-a", mtu: mtu, inbound: aToB, outbound: bToA)
        )
    }

    func send(_ frame: [UInt8]) async throws {
        guard frame.count <= mtu else {
            throw MeshError(.frameTooLarge, "memory packet of \(frame.count) bytes over \(mtu)")
        }
        sent.withLock { $0.append(frame) }
        guard await outbound.send(frame) else { throw MeshError(.linkClosed, "memory link closed") }
    }

    func receive() async throws -> [UInt8]? { await inbound.receive() }

    func close() async {
        inbound.finish()
        outbound.finish()
    }
}
