import Foundation
import MeshCore
import Testing

/// A plain blocking TCP socket to 127.0.0.1, for playing a misbehaving peer. Its peers
/// are node processes, not servers in the test process; a wait on one that is must go
/// through `onOwnThread` (MeshTesting) so that it cannot starve that server.
struct RawTCPSocket: Sendable {
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw systemError("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let error = systemError("connect to 127.0.0.1:\(port)")
            Glibc.close(descriptor)
            throw error
        }
    }

    /// Writes all of `bytes` (no SIGPIPE if the node already closed).
    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw systemError("send") }
            offset += written
        }
    }

    /// Reads exactly `count` bytes, polling without blocking.
    /// - Throws: when the node closes the connection first, or nothing comes for long.
    func read(count: Int, _ what: String) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<Self.pollAttempts {
            var buffer = [UInt8](repeating: 0, count: count - bytes.count)
            let received = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if received > 0 {
                bytes += buffer.prefix(received)
                if bytes.count == count { return bytes }
                continue
            }
            if received == 0 { throw MeshError(.linkClosed, "the node closed the connection before \(what)") }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { throw systemError("recv (\(what))") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw MeshError(MeshError.Code("testTimedOut"), "\(what) did not arrive")
    }

    /// Plays the initiator's half of a Noise XX handshake: sends a valid message 1 (the
    /// X25519 base point as the ephemeral key) and reads the node's message 2.
    func sendMessage1AndReadMessage2() async throws {
        // On the wire: length 33, whole-segment packet flag 0xC0, the 32-byte key.
        try write([0, 33, 0xC0, 9] + [UInt8](repeating: 0, count: 31))
        let prefix = try await read(count: 2, "the length of the node's message 2")
        let length = Int(prefix[0]) << 8 | Int(prefix[1])
        // Flag + e (32) + encrypted s (32 + 16) + encrypted identity proof (99 + 16).
        #expect(length == 1 + 195)
        let message2 = try await read(count: length, "the node's message 2")
        #expect(message2.first == 0xC0)
    }

    /// Waits until the node closes the connection (end of stream or reset); any bytes
    /// the node sends meanwhile are read and dropped.
    /// - Throws: when the node keeps the connection open for long.
    func awaitClosedByRemote(_ what: String) async throws {
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<Self.pollAttempts {
            let received = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if received > 0 { continue }
            if received == 0 { return }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { return }  // reset by the node
            try await Task.sleep(for: .milliseconds(20))
        }
        throw MeshError(MeshError.Code("testTimedOut"), "the node did not close \(what)")
    }

    /// 20 ms polls: 30 s at the least, far above any timeout the node is configured with.
    static let pollAttempts = 1500

    func close() {
        Glibc.close(descriptor)
    }
}
