#if canImport(CBlueZ)
import CBlueZ
#if canImport(Glibc)
import Glibc
#endif

/// The kernel's LE ATT fixed channel (L2CAP CID 4) as `SOCK_SEQPACKET` sockets: one
/// ATT PDU per packet, no `bluetoothd`. A listening socket bound to CID 4 gets one
/// accepted socket per LE connection (whoever made it); connecting one to a device
/// creates the LE connection when needed.
enum ATTSocket {
    /// The ATT fixed channel.
    static let cid: UInt16 = 4

    /// A non-blocking ATT socket bound to the local adapter.
    static func socket(local: [UInt8], type: BLEPeerAddress.AddressType) throws(SystemError) -> Int32 {
        let fd = try Posix.call("socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP) for ATT") {
            Glibc.socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_L2CAP)
        }
        do {
            var address = L2CAP.socketAddress(local, type: type, psm: 0)
            address.l2_cid = cbluez_htobs(cid)
            try Posix.call("bind(ATT, CID 4)") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
                    }
                }
            }
            var sendBuffer = Int32(L2CAP.sendBufferBytes)
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

    /// Starts a non-blocking connect of the ATT channel to `remote`; true when done at once.
    static func startConnect(_ fd: Int32, to remote: BLEPeerAddress) throws(SystemError) -> Bool {
        var address = L2CAP.socketAddress(remote.bytes, type: remote.type, psm: 0)
        address.l2_cid = cbluez_htobs(cid)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
            }
        }
        if result == 0 { return true }
        let code = errno
        if code == EINPROGRESS || code == EAGAIN { return false }
        throw SystemError("connect(ATT \(remote.deviceAddress)/\(remote.type))", errno: code)
    }
}
#endif
