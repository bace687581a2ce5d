import MeshCore
import Synchronization

/// Wraps a transport so that its links drop, on the way out, the first `count`
/// frames of one frame type (whole frames only: packets flagged `0xC0`, as small
/// frames on a loopback link are) — a deterministic stand-in for loss on a lossy link.
/// Works on ``PlaintextLinkSecurity`` links, whose packets show the frame header.
/// The frames of that type it lets through are kept in `passed` (packets as written).
final class FrameDropTransport: Transport {
    let inner: any Transport
    let kind: UInt8
    let remaining: Mutex<Int>
    let dropped = Atomic<Int>(0)
    let passed = Mutex<[[UInt8]]>([])

    init(_ inner: any Transport, dropping count: Int, of kind: UInt8) {
        self.inner = inner
        self.kind = kind
        remaining = Mutex(count)
    }

    var name: String { inner.name }
    var capabilities: TransportCapabilities { inner.capabilities }

    func listen(context: TransportContext) async throws {
        let wrapped = TransportContext(localPeerID: context.localPeerID, logger: context.logger) { [self] event in
            if case .inboundLink(let link) = event {
                context.report(.inboundLink(FrameDropLink(inner: link, transport: self)))
            } else {
                context.report(event)
            }
        }
        try await inner.listen(context: wrapped)
    }

    func dial(_ hint: PeerHint) async throws -> any Link {
        FrameDropLink(inner: try await inner.dial(hint), transport: self)
    }

    /// Whether to drop this packet.
    func drop(_ packet: [UInt8]) -> Bool {
        guard packet.count >= 3, packet[0] == 0xC0, packet[1] == Frame.version, packet[2] == kind else { return false }
        let drop = remaining.withLock { remaining -> Bool in
            guard remaining > 0 else { return false }
            remaining -= 1
            return true
        }
        if drop {
            dropped.add(1, ordering: .relaxed)
        } else {
            passed.withLock { $0.append(packet) }
        }
        return drop
    }
}

/// One link of a ``FrameDropTransport``.
final class FrameDropLink: Link {
    let inner: any Link
    let transport: FrameDropTransport

    init(inner: any Link, transport: FrameDropTransport) {
        self.inner = inner
        self.transport = transport
    }

    var remoteAddress: String { inner.remoteAddress }
    var mtu: Int { inner.mtu }

    func send(_ frame: [UInt8]) async throws {
        if transport.drop(frame) { return }
        try await inner.send(frame)
    }

    func receive() async throws -> [UInt8]? { try await inner.receive() }

    func close() async { await inner.close() }
}
