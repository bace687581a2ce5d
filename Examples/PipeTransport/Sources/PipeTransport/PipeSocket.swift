import Dispatch
import Glibc
import MeshCore
import Synchronization

/// One non-blocking `AF_UNIX`/`SOCK_SEQPACKET` socket. Packets keep their boundaries, so
/// one frame is one packet. Waiting for readiness uses one-shot Dispatch sources;
/// ``shutdown()`` wakes every waiter. The descriptor is closed when the object goes away,
/// so its number is never reused while a waiter (which holds the object) looks at it.
final class PipeSocket: Sendable {
    let fd: Int32
    private let state = Mutex(State())
    private static let queue = DispatchQueue(label: "scmesh.pipe.readiness")

    private struct State {
        var shut = false
        var waiters: [ObjectIdentifier: Waiter] = [:]
    }

    /// A readiness source. `@unchecked Sendable`: Dispatch sources are thread-safe, and
    /// `cancel()` (the only call made from other threads) may be called from any thread.
    private struct Waiter: @unchecked Sendable {
        let source: any DispatchSourceProtocol
    }

    private init(fd: Int32) { self.fd = fd }
    deinit { Glibc.close(fd) }

    /// Whether ``shutdown()`` was called.
    var isShut: Bool { state.withLock { $0.shut } }

    /// A listening socket at `path`, replacing a stale socket file nobody listens on.
    static func listen(path: String) throws -> PipeSocket {
        let socket = try PipeSocket(fd: check(Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0), "socket"))
        if try withAddress(path, { bind(socket.fd, $0, $1) }) != 0 {
            guard errno == EADDRINUSE, (try? connect(path: path)) == nil else {
                throw MeshError(.transportUnavailable, "cannot listen on \(path): \(reason(errno))")
            }
            unlink(path)  // stale: left by a process that died
            _ = try check(withAddress(path, { bind(socket.fd, $0, $1) }), "bind \(path)")
        }
        _ = try check(Glibc.listen(socket.fd, 64), "listen on \(path)")
        return socket
    }

    /// A socket connected to the listener at `path`.
    /// - Throws: `.dialFailed` when nothing listens there (or its backlog stays full).
    static func connect(path: String) throws -> PipeSocket {
        let socket = try PipeSocket(fd: check(Glibc.socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0), "socket"))
        guard try withAddress(path, { Glibc.connect(socket.fd, $0, $1) }) == 0 else {
            throw MeshError(.dialFailed, "could not reach pipe://\(path): \(reason(errno)); check that a node listens there")
        }
        return socket
    }

    /// The next connection, or nil when none is waiting.
    func accept() throws -> PipeSocket? {
        let client = Glibc.accept(fd, nil, nil)
        if client >= 0 {
            _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            return PipeSocket(fd: client)
        }
        if errno == EAGAIN || errno == EINTR || errno == ECONNABORTED { return nil }
        throw MeshError(.linkClosed, "accept failed: \(Self.reason(errno))")
    }

    /// Sends one packet; false when the socket buffer is full (wait for writability).
    func send(_ bytes: [UInt8]) throws -> Bool {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent >= 0 { return true }
        if errno == EAGAIN || errno == EINTR { return false }
        throw MeshError(.linkClosed, "pipe send failed: \(Self.reason(errno))")
    }

    /// What ``receive(capacity:)`` found.
    enum Received {
        case packet([UInt8])
        case end
        case wouldBlock
    }

    /// Receives one packet, cut to `capacity` bytes. Zero bytes is the end of the stream
    /// (links never carry empty frames).
    func receive(capacity: Int) throws -> Received {
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            let got = recv(fd, buffer.baseAddress, capacity, 0)
            failure = got < 0 ? errno : 0
            count = max(0, got)
        }
        if failure == EAGAIN || failure == EINTR { return .wouldBlock }
        if failure != 0 { throw MeshError(.linkClosed, "pipe receive failed: \(Self.reason(failure))") }
        return bytes.isEmpty ? .end : .packet(bytes)
    }

    /// Suspends until the socket is readable (or writable), or until ``shutdown()``.
    func wait(writable: Bool) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiter = Waiter(
                source: writable
                    ? DispatchSource.makeWriteSource(fileDescriptor: fd, queue: Self.queue)
                    : DispatchSource.makeReadSource(fileDescriptor: fd, queue: Self.queue))
            let key = ObjectIdentifier(waiter.source as AnyObject)
            waiter.source.setEventHandler { waiter.source.cancel() }
            waiter.source.setCancelHandler {
                self.state.withLock { _ = $0.waiters.removeValue(forKey: key) }
                continuation.resume()
            }
            let registered = state.withLock { state in
                if !state.shut { state.waiters[key] = waiter }
                return !state.shut
            }
            waiter.source.resume()
            if !registered { waiter.source.cancel() }
        }
    }

    /// Shuts the socket down both ways (the remote reads the end of the stream, its sends
    /// fail) and wakes every waiter. Idempotent.
    func shutdown() {
        let waiters = state.withLock { state in
            state.shut = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        for waiter in waiters { waiter.source.cancel() }
    }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw MeshError(.invalidArgument, "socket path '\(path)' must be 1...107 bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    private static func check(_ result: Int32, _ what: String) throws -> Int32 {
        guard result >= 0 else { throw MeshError(.transportUnavailable, "\(what) failed: \(reason(errno))") }
        return result
    }

    static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
