import MeshCore
import Synchronization

/// One connection of a ``PipeTransport``: one frame per `SOCK_SEQPACKET` packet, so
/// boundaries and order come from the kernel, and a full socket buffer is the
/// back-pressure.
final class PipeLink: Link {
    let id = LinkID.next()
    let transportName: String
    let remoteAddress: String
    let mtu: Int
    private let socket: PipeSocket
    private let onClose: @Sendable (LinkID) -> Void
    private let state = Mutex((closed: false, stats: LinkStats()))

    init(socket: PipeSocket, transportName: String, remoteAddress: String, mtu: Int, onClose: @escaping @Sendable (LinkID) -> Void) {
        self.socket = socket
        self.transportName = transportName
        self.remoteAddress = remoteAddress
        self.mtu = mtu
        self.onClose = onClose
    }

    var stats: LinkStats { state.withLock { $0.stats } }

    func send(_ frame: [UInt8]) async throws {
        guard frame.count <= mtu else {
            throw MeshError(.frameTooLarge, "frame of \(frame.count) bytes exceeds the pipe link MTU \(mtu)")
        }
        guard !frame.isEmpty else {
            throw MeshError(.invalidArgument, "a pipe link cannot carry an empty frame (it reads as the end of the stream)")
        }
        while true {
            guard !state.withLock({ $0.closed }) else {
                throw MeshError(.linkClosed, "pipe link to \(remoteAddress) is closed")
            }
            if try socket.send(frame) {
                state.withLock { $0.stats.recordSent(frame.count) }
                return
            }
            await socket.wait(writable: true)
        }
    }

    func receive() async throws -> [UInt8]? {
        while !state.withLock({ $0.closed }) {
            switch try socket.receive(capacity: mtu + 1) {
            case .packet(let frame) where frame.count > mtu:
                await close()
                throw MeshError(.malformedFrame, "pipe://\(remoteAddress) sent a packet over the link MTU \(mtu)")
            case .packet(let frame):
                state.withLock { $0.stats.recordReceived(frame.count) }
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
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        socket.shutdown()
        onClose(id)
    }
}
