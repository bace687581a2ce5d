import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The next port ``freeLoopbackPort()`` tries. One counter for every test target, since
/// `swift test` runs them all in one process.
private let nextPort = Atomic<Int>(Int.random(in: 0..<27_000))

/// A TCP port on 127.0.0.1 that nobody listens on now, from 5000–31999, each handed out
/// once per run: below Linux's ephemeral range (32768–60999), so no outgoing connection
/// of a test running in parallel can take it between the moment it is chosen and the
/// moment a transport listens on it (again, after a restart).
/// - Throws: ``TimedOut`` when every port in the range is taken.
public func freeLoopbackPort() throws -> Int {
    for _ in 0..<27_000 {
        let port = 5_000 + nextPort.add(1, ordering: .relaxed).newValue % 27_000
        if canBind(port) { return port }
    }
    throw TimedOut(what: "a free TCP port on 127.0.0.1 in 5000-31999")
}

private func canBind(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in.loopback(port: port)
    return withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

extension sockaddr_in {
    /// 127.0.0.1:`port`.
    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}
