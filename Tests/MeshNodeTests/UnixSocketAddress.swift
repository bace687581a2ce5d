import Glibc

/// Runs `body` with `path` as a `sockaddr_un` (for `bind` and `connect` on a raw
/// `AF_UNIX` socket in tests) and returns its result.
func withUnixSocketAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { buffer in
        for (index, byte) in bytes.prefix(buffer.count - 1).enumerated() { buffer[index] = byte }
        buffer[min(bytes.count, buffer.count - 1)] = 0
    }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}
