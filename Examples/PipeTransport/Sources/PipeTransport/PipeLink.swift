import MeshCore
import Synchronization

/// One connection of a ``PipeTransport``: one frame per `SOCK_SEQPACKET` packet, so
/// boundaries and order come from the kernel, and a full socket buffer is the
/// back-pressure.
final class PipeLink: Link {
    /// The transport's handle for this link.
    let id = LinkID.next()
    let remoteAddress: String
    let mtu: Int
    private let socket: PipeSocket
    private let onClose: @Sendable (LinkID) -> Void
    private let closed = Mutex(false)

    init(socket: PipeSocket, remoteAddress: String, mtu: Int, onClose: @escaping @Sendable (LinkID) -> Void) {
        self.socket = socket
        self.remoteAddress = remoteAddress
        self.mtu = mtu
        self.onClose = onClose
    }

    func send(_ frame: [UInt8]) async throws {
        guard frame.count <= mtu else {
            throw MeshError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the pipe link MTU \(mtu)")
        }
        guard !frame.isEmpty else {
            throw MeshError(.invalidArgument, "a pipe link cannot carry an empty frame (it reads as the end of the stream)")
        }
        while true {
            guard !closed.withLock({ $0 }) else {
                throw MeshError(.linkClosed, "pipe link to \(remoteAddress) is closed")
            }
            if try socket.send(frame) { return }
            await socket.wait(writable: true)
        }
    }

    func receive() async throws -> [UInt8]? {
        while !closed.withLock({ $0 }) {
            switch try socket.receive(capacity: mtu + 1) {
            case .packet(let frame) where frame.count > mtu:
                await close()
                throw MeshError(.malformedFrame, "pipe://\(remoteAddress) sent a packet over the link MTU \(mtu)")
            case .packet(let frame):
                return frame
            case .end:
                return nil
            case .wouldBlock:
                await socket.wait(writable: false)
            }
        }
        return nil
    }

    func close() async {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        socket.shutdown()
        onClose(id)
    }
}
