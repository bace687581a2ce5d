#if canImport(CAvahi)
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Plain blocking loopback sockets for the conformance harness: a free port, and a
/// client that writes bytes breaking the framing and waits for the server to hang up.
/// ``writeAndAwaitClose(port:_:)`` blocks: call it inside `onOwnThread` (MeshTesting).
enum RawSocket {
    /// Ports handed out by ``freePort()``: 5000–9999, below Linux's ephemeral range
    /// (32768–60999) so no outgoing connection of a parallel test takes one before a
    /// transport listens on it, and apart from the ranges other test targets in this
    /// process use (10000–31999).
    private static let nextPort = Atomic<Int>(Int.random(in: 0..<5_000))

    /// A TCP port on 127.0.0.1 nobody listens on now, handed out once per test run.
    static func freePort() throws -> Int {
        for _ in 0..<5_000 {
            let port = 5_000 + nextPort.add(1, ordering: .relaxed).newValue % 5_000
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
            defer { close(fd) }
            var address = loopback(port: UInt16(port))
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if bound == 0 { return port }
        }
        throw TestFailure("no free TCP port on 127.0.0.1 in 5000-9999")
    }

    /// Connects to 127.0.0.1:`port`, writes `bytes`, closes its sending side and waits
    /// (at most 10 s) until the server closes the connection.
    static func writeAndAwaitClose(port: UInt16, _ bytes: [UInt8]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw TestFailure("connect to port \(port) failed: errno \(errno)") }
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return }
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

#endif
