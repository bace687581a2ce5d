#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif

/// L2CAP LE credit-based channels through the kernel's `BTPROTO_L2CAP`
/// `SOCK_SEQPACKET` sockets: listen, accept, connect, security and MTU.
enum L2CAP {
    /// The socket send buffer of a channel (the kernel doubles it): about 50 MTU-sized
    /// packets, a fraction of a second of LE airtime.
    static let sendBufferBytes = 16 * 1024

    /// A socket address for `bytes` (display order), `type` and `psm`.
    static func socketAddress(_ bytes: [UInt8], type: BLEPeerAddress.AddressType, psm: UInt16) -> sockaddr_l2 {
        var address = sockaddr_l2()
        address.l2_family = sa_family_t(AF_BLUETOOTH)
        address.l2_psm = cbluez_htobs(psm)
        // bdaddr_t is little-endian: the last displayed byte first.
        let reversed = Array(bytes.reversed())
        withUnsafeMutableBytes(of: &address.l2_bdaddr) { raw in
            for index in 0..<6 { raw[index] = reversed[index] }
        }
        address.l2_bdaddr_type = type.rawValue
        return address
    }

    /// The display-order bytes of a socket address's device address.
    static func addressBytes(_ address: sockaddr_l2) -> [UInt8] {
        var copy = address.l2_bdaddr
        return withUnsafeBytes(of: &copy) { Array($0.prefix(6)).reversed() }
    }

    /// A new, non-blocking L2CAP `SOCK_SEQPACKET` socket bound to the local adapter.
    static func socket(
        local: [UInt8],
        type: BLEPeerAddress.AddressType,
        psm: UInt16,
        security: BLETransport.Configuration.SecurityLevel,
        receiveMTU: Int
    ) throws(SystemError) -> Int32 {
        let fd = try Posix.call("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)") {
            Glibc.socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_L2CAP)
        }
        do {
            var address = socketAddress(local, type: type, psm: psm)
            try Posix.call("bind(L2CAP LE, psm 0x\(String(psm, radix: 16)))") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
                    }
                }
            }
            var level = bt_security()
            level.level = UInt8(security.kernelLevel)
            try Posix.call("setsockopt(BT_SECURITY)") {
                setsockopt(fd, SOL_BLUETOOTH, BT_SECURITY, &level, socklen_t(MemoryLayout<bt_security>.size))
            }
            var mtu = UInt16(clamping: receiveMTU)
            try Posix.call("setsockopt(BT_RCVMTU)") {
                setsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &mtu, socklen_t(MemoryLayout<UInt16>.size))
            }
            // A small send buffer: a slow radio should push back on the sender after a few
            // packets instead of queueing seconds of traffic in the kernel.
            var sendBuffer = Int32(sendBufferBytes)
            try Posix.call("setsockopt(SO_SNDBUF)") {
                setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
            }
            try Posix.setNonBlocking(fd)
            return fd
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }

    /// The channel's send and receive MTUs (`BT_SNDMTU`/`BT_RCVMTU`; `L2CAP_OPTIONS`
    /// fails on LE sockets).
    static func mtus(_ fd: Int32) throws(SystemError) -> (send: Int, receive: Int) {
        var send: UInt16 = 0
        var receive: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        try Posix.call("getsockopt(BT_SNDMTU)") { getsockopt(fd, SOL_BLUETOOTH, BT_SNDMTU, &send, &length) }
        length = socklen_t(MemoryLayout<UInt16>.size)
        try Posix.call("getsockopt(BT_RCVMTU)") { getsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &receive, &length) }
        return (Int(send), Int(receive))
    }

    /// Starts listening.
    static func listen(_ fd: Int32) throws(SystemError) {
        try Posix.call("listen(L2CAP)") { Glibc.listen(fd, 16) }
    }

    /// Accepts one pending channel, or nil when none is pending (`EAGAIN`).
    static func accept(_ fd: Int32) throws(SystemError) -> (fd: Int32, peer: sockaddr_l2)? {
        var peer = sockaddr_l2()
        var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
        let result = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.accept(fd, $0, &length)
            }
        }
        if result >= 0 {
            _ = fcntl(result, F_SETFD, FD_CLOEXEC)
            return (result, peer)
        }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return nil }
        throw SystemError("accept(L2CAP)", errno: code)
    }

    /// Starts a non-blocking connect; true when it completed at once.
    static func startConnect(_ fd: Int32, to remote: BLEPeerAddress) throws(SystemError) -> Bool {
        var address = socketAddress(remote.bytes, type: remote.type, psm: remote.psm)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
            }
        }
        if result == 0 { return true }
        let code = errno
        if code == EINPROGRESS || code == EAGAIN { return false }
        throw SystemError("connect(L2CAP LE \(remote))", errno: code)
    }
}

extension BLETransport.Configuration.SecurityLevel {
    /// The kernel's `BT_SECURITY_*` value.
    var kernelLevel: Int32 {
        switch self {
        case .low: return BT_SECURITY_LOW
        case .medium: return BT_SECURITY_MEDIUM
        case .high: return BT_SECURITY_HIGH
        }
    }
}
#endif
