import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

// A raw body at or above the outbox's file threshold goes straight into a payload file
// while it arrives, hashed while it syncs; a body cut short must never become a queued
// message, and must leave no file behind.

@Suite("HTTP uploads streamed into the outbox")
struct UploadTests {
    @Test(
        "a 1 MiB upload streamed from a file descriptor (as `scmesh send - < FILE` does) is delivered byte for byte with its receipt, kept by the receiver in a payload file and downloaded from it; the address file names the API"
    )
    func streamedUploadIsDelivered() async throws {
        try await HTTPNode.withPair { a, b in
            #expect(APIAddress.read(dataDirectory: a.directory.path) == a.address)
            try await eventually("a sees b") {
                let peers = try await a.call(.GET, "/api/v1/peers").object["peers"] as? [[String: Any]] ?? []
                return peers.contains { $0["peer"] as? String == b.node.peerID.hex }
            }
            let payload = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 5) }
            let file = a.directory.path + "/upload-source"
            #expect(FileManager.default.createFile(atPath: file, contents: Data(payload)))
            let descriptor = open(file, O_RDONLY)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            let client = try #require(try await NodeHTTPClient.forNode(dataDirectory: a.directory.path))
            let reply = try await client.send(
                SendRequest(peer: b.node.peerID.hex, wait: true, timeoutSeconds: 30),
                streaming: descriptor,
                length: payload.count
            )
            // Delivered means b's signed receipt carried the digest a computed on the way in.
            let sent = try reply.decode(SendReply.self)
            #expect(sent.status == .delivered, "\(reply.line)")
            #expect(sent.bytes == payload.count)
            let inbox = try await b.call(.GET, "/api/v1/inbox?after=0&limit=1")
            let seq = try #require((inbox.object["messages"] as? [[String: Any]])?.first?["seq"] as? Int)
            // The receiver keeps the payload in a file of its own, and the raw download
            // reads it from there.
            let received = try FileManager.default.contentsOfDirectory(
                atPath: b.directory.path + "/store.sqlite-payloads"
            )
            #expect(received.count == 1 && received[0].hasPrefix("inbox-\(sent.messageID.hex)-"), "\(received)")
            let download = try await b.call(.GET, "/api/v1/inbox/\(seq)/payload")
            #expect(download.status == 200)
            #expect(download.body == payload)
            #expect(download.header("X-Message-ID") == sent.messageID.hex)
        }
    }

    @Test(
        "a body that ends early or breaks queues nothing and leaves no file; the error says how many bytes of how many arrived"
    )
    func shortBodiesQueueNothing() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let payloads = a.directory.path + "/store.sqlite-payloads"
        let declared = 300_000
        let short = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(bytes: [UInt8](repeating: 1, count: 100_000)))
            continuation.finish()
        }
        do {
            _ = try await a.node.commands.receivePayload(short, declaredBytes: declared)
            Issue.record("a short body was accepted")
        } catch let error as MeshError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("ended after 100000 of its 300000 declared bytes"), "\(error.message)")
            #expect(error.message.contains("nothing was queued"))
        }
        struct Reset: Error {}
        let broken = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            continuation.yield(ByteBuffer(bytes: [UInt8](repeating: 2, count: 100_000)))
            continuation.finish(throwing: Reset())
        }
        await #expect(throws: Reset.self) {
            _ = try await a.node.commands.receivePayload(broken, declaredBytes: declared)
        }
        let long = AsyncStream<ByteBuffer> { continuation in
            continuation.yield(ByteBuffer(bytes: [UInt8](repeating: 3, count: declared + 1)))
            continuation.finish()
        }
        await #expect(throws: MeshError.self) {
            _ = try await a.node.commands.receivePayload(long, declaredBytes: declared)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty)

        // A real client that goes away in the middle of its body.
        let (host, port) = try #require(a.address.split(separator: ":").map(String.init).splitHostPort())
        let head =
            "POST /api/v1/messages?to=\(strangerPeerHex) HTTP/1.1\r\nHost: \(a.address)\r\nAuthorization: Bearer \(a.token)\r\n"
            + "Content-Type: application/octet-stream\r\nContent-Length: \(1 << 20)\r\n\r\n"
        // The blocking write on a thread of its own: the node reading it is in this process.
        let socket = try await onOwnThread {
            let socket = try RawTCPClient(host: host, port: port)
            try socket.write(Array(head.utf8) + [UInt8](repeating: 4, count: 200_000))
            return socket
        }
        try await eventually("the node writes the upload into a payload file as it arrives") {
            try FileManager.default.contentsOfDirectory(atPath: payloads).count == 1
        }
        socket.close()
        try await eventually("the cut upload's file is removed") {
            try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty
        }
        let outbox = try await a.call(.GET, "/api/v1/outbox")
        #expect(outbox.status == 200 && outbox.object["total"] as? Int == 0, "\(outbox.text)")
        let history = try await a.call(.GET, "/api/v1/messages?limit=5").object["messages"] as? [[String: Any]]
        #expect(history?.isEmpty == true, "\(String(describing: history))")
    }
}

extension Array where Element == String {
    /// `["127.0.0.1", "7480"]` → `("127.0.0.1", 7480)`.
    func splitHostPort() -> (String, Int)? {
        guard count == 2, let port = Int(self[1]) else { return nil }
        return (self[0], port)
    }
}

/// A blocking TCP client socket, for a client that stops in the middle of a request.
/// Its calls block: tests make them through `onOwnThread`.
final class RawTCPClient: Sendable {
    let descriptor: Int32

    init(host: String, port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard descriptor >= 0, connected == 0 else {
            throw MeshError(.invalidArgument, "cannot connect to \(host):\(port): \(String(cString: strerror(errno)))")
        }
    }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else {
                throw MeshError(.invalidArgument, "write failed: \(String(cString: strerror(errno)))")
            }
            sent += count
        }
    }

    func close() {
        Glibc.close(descriptor)
    }
}
