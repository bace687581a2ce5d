import MeshCore
import Synchronization

@testable import TransportBLE

#if canImport(Glibc)
import Glibc
#endif

/// A connected `socketpair(AF_UNIX, SOCK_SEQPACKET)` wrapped in two links: the same
/// message-boundary semantics as an L2CAP LE credit-based channel, on any kernel.
func makeLinkPair(
    mtu: Int = 512,
    receiveMTU: Int? = nil,
    sendBuffer: Int32? = nil
) throws -> (SeqPacketLink, SeqPacketLink) {
    var fds: [Int32] = [0, 0]
    let result = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
    guard result == 0 else { throw SystemError("socketpair", errno: errno) }
    if var size = sendBuffer {
        for fd in fds {
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }
    let a = try SeqPacketLink(
        adopting: fds[0],
        transportName: "ble",
        remoteAddress: "pair-b",
        mtu: mtu,
        receiveMTU: receiveMTU ?? mtu
    )
    let b = try SeqPacketLink(
        adopting: fds[1],
        transportName: "ble",
        remoteAddress: "pair-a",
        mtu: mtu,
        receiveMTU: receiveMTU ?? mtu
    )
    return (a, b)
}

/// Deterministic test bytes: frame `index` of `size` bytes.
func pattern(_ index: Int, size: Int) -> [UInt8] {
    (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index &* 7) }
}

/// A counter shared between test tasks.
final class Counter: Sendable {
    private let storage = Atomic<Int>(0)
    init() {}
    func increment() { storage.add(1, ordering: .relaxed) }
    var value: Int { storage.load(ordering: .relaxed) }
}
