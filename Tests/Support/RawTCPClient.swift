#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain BSD socket connected to 127.0.0.1, for playing a misbehaving peer of a
/// transport or a node. Its calls do not block (reads poll with a bound), except
/// ``write(_:)`` while the socket buffer is full: write small amounts, or inside
/// `onOwnThread` (MeshTesting), or the wait can starve an in-process server that must
/// read them. Closed when the last reference goes.
public final class RawTCPClient: Sendable {
    /// The socket.
    public let fd: Int32

    /// Connects to `127.0.0.1:port`; `receiveBuffer` sets `SO_RCVBUF` first (a small
    /// one makes a client that never reads back up the server's writes sooner).
    /// - Throws: ``SystemCallFailed``.
    public init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Self.failure("socket") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in.loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else {
            let error = Self.failure("connect to 127.0.0.1:\(port)")
            close(fd)
            throw error
        }
    }

    /// Writes all of `bytes` (no SIGPIPE when the other end already closed).
    /// - Throws: ``SystemCallFailed`` when the other end is gone.
    public func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Self.failure("send") }
            offset += sent
        }
    }

    /// Reads exactly `count` bytes, polling every 20 ms for at most `seconds`.
    /// - Throws: ``TimedOut`` naming `what` when the other end closes first or nothing
    ///   comes in time.
    public func read(count: Int, _ what: String, seconds: Double = hangGuardSeconds) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            var buffer = [UInt8](repeating: 0, count: count - bytes.count)
            let received = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if received > 0 {
                bytes += buffer.prefix(received)
                if bytes.count == count { return bytes }
                continue
            }
            if received == 0 { throw TimedOut(what: "\(what) (the other end closed the connection first)") }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { throw Self.failure("recv (\(what))") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TimedOut(what: what)
    }

    /// The client's own address as the server sees it, `"127.0.0.1:port"`.
    public var localAddress: String {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return "127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
    }

    /// Shuts down the write side (the other end sees EOF).
    public func finishWriting() { shutdown(fd, Int32(SHUT_WR)) }

    /// Whether the other end closed the connection (EOF or reset) within `seconds`;
    /// bytes it sends meanwhile are read and dropped.
    public func closedByServer(seconds: Double = hangGuardSeconds) async -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { return true }
            if count < 0 && errno != EAGAIN && errno != EWOULDBLOCK { return true }
            if count < 0 { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return false
    }

    /// Waits until the other end closes the connection (EOF or reset), reading and
    /// dropping what it sends meanwhile.
    /// - Throws: ``TimedOut`` naming `what` when it stays open for `seconds`.
    public func awaitClosedByRemote(_ what: String, seconds: Double = hangGuardSeconds) async throws {
        guard await closedByServer(seconds: seconds) else { throw TimedOut(what: "the other end to close \(what)") }
    }

    deinit { close(fd) }

    private static func failure(_ call: String) -> SystemCallFailed { SystemCallFailed(call) }
}

/// A system call failed; the description names it and `errno`'s text.
public struct SystemCallFailed: Error, CustomStringConvertible {
    /// The call, with what it was for.
    public var call: String
    /// `strerror(errno)` at the failure.
    public var reason: String
    /// Records `call` with the current `errno`.
    public init(_ call: String) {
        self.call = call
        reason = String(cString: strerror(errno))
    }
    public var description: String { "\(call) failed: \(reason)" }
}
