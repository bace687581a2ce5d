#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call: its name and `errno`. The one place errno becomes a Swift error;
/// the transport turns it into a ``MeshError`` with a message that says what to do.
package struct SystemError: Error, Sendable, CustomStringConvertible, Equatable {
    /// The call that failed, with whatever context helps (`"bind(psm 0x0081)"`).
    package var call: String
    /// The errno value.
    package var errno: Int32

    /// Creates an error for `call` failing with `errno`.
    package init(_ call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The symbolic errno name (`EAFNOSUPPORT`) where known, else the number.
    package var errnoName: String {
        switch errno {
        case EAFNOSUPPORT: return "EAFNOSUPPORT"
        case EPROTONOSUPPORT: return "EPROTONOSUPPORT"
        case ENODEV: return "ENODEV"
        case ENETDOWN: return "ENETDOWN"
        case EACCES: return "EACCES"
        case EPERM: return "EPERM"
        case EADDRINUSE: return "EADDRINUSE"
        case EINVAL: return "EINVAL"
        case EAGAIN: return "EAGAIN"
        case EINPROGRESS: return "EINPROGRESS"
        case ECONNREFUSED: return "ECONNREFUSED"
        case ECONNRESET: return "ECONNRESET"
        case EHOSTDOWN: return "EHOSTDOWN"
        case EHOSTUNREACH: return "EHOSTUNREACH"
        case ETIMEDOUT: return "ETIMEDOUT"
        case EPIPE: return "EPIPE"
        case ENOTCONN: return "ENOTCONN"
        case EBADF: return "EBADF"
        case EBADFD: return "EBADFD"
        case EMSGSIZE: return "EMSGSIZE"
        case ENOTSUP: return "EOPNOTSUPP"
        case EBUSY: return "EBUSY"
        default: return "errno \(errno)"
        }
    }

    /// `"<call> failed: <ERRNO> (<strerror>)"`.
    package var description: String {
        "\(call) failed: \(errnoName) (\(String(cString: strerror(errno))))"
    }
}

/// Thin wrappers over the POSIX calls the transport uses: each returns its result or
/// throws ``SystemError``; `EINTR` is retried.
package enum Posix {
    /// Runs `body` until it returns something other than -1/EINTR.
    @discardableResult
    package static func call<T: FixedWidthInteger>(
        _ name: @autoclosure () -> String,
        _ body: () -> T
    ) throws(SystemError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw SystemError(name(), errno: code)
        }
    }

    /// `shutdown(2)`'s `SHUT_RDWR` (the Glibc constant is not visible in every file once
    /// BlueZ's headers re-export `<sys/socket.h>`).
    package static let shutdownBoth: Int32 = 2

    /// Puts a descriptor into non-blocking mode.
    package static func setNonBlocking(_ fd: Int32) throws(SystemError) {
        let flags = try call("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        try call("fcntl(F_SETFL, O_NONBLOCK)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Reads the pending error of a socket (`SO_ERROR`), 0 when none.
    package static func socketError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        if getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length) != 0 { return Glibc.errno }
        return value
    }

    /// Wall-clock seconds since the Unix epoch.
    package static func unixTime() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(max(0, now.tv_sec))
    }
}
