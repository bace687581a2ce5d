import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import NIOHTTP1
import Testing

// A streamed upload names its peer and parameters in the query: they are checked before
// the body is read, so a send that cannot go is refused at once, with the API's JSON
// error, and nothing of its body is written.

@Suite("HTTP uploads refused before their body is read")
struct UploadRefusalTests {
    @Test("a 10 MiB upload to an unknown alias, or with a bad parameter, is refused with a JSON error before its body is read; nothing is written")
    func badUploadsAreRefusedFirst() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let payloads = a.directory.path + "/store.sqlite-payloads"
        let size = 10 << 20
        let peer = PeerID.random().hex
        let cases: [(query: String, field: String)] = [
            ("to=nosuchalias", "no contact has the alias \"nosuchalias\""),
            ("to=\(peer)&expires_seconds=-5", "\"expires_seconds\""),
            ("to=\(peer)&id=xyz", "\"id\" must be a message ID"),
            ("to=\(peer)&timeout_seconds=0", "\"timeout_seconds\""),
        ]
        for (query, field) in cases {
            // Only the first 64 KiB of the declared 10 MiB are sent: the reply comes
            // all the same, so the node answered without reading the body.
            let (host, port) = try #require(a.address.split(separator: ":").map(String.init).splitHostPort())
            let socket = try RawTCPClient(host: host, port: port)
            defer { socket.close() }
            let head =
                "POST /api/v1/messages?\(query) HTTP/1.1\r\nHost: \(a.address)\r\nAuthorization: Bearer \(a.token)\r\n"
                + "Connection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n"
            try socket.write(Array(head.utf8) + [UInt8](repeating: 7, count: 64 << 10))
            let response = String(decoding: try socket.readUntilClosed(timeoutSeconds: 30), as: UTF8.self)
            #expect(response.hasPrefix("HTTP/1.1 400"), "\(query): \(response.prefix(300))")
            let body = String(response[(response.range(of: "\r\n\r\n")?.upperBound ?? response.endIndex)...])
            let error = (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["error"] as? [String: Any]
            #expect(error?["code"] as? String == "invalidArgument", "\(query): \(body)")
            #expect((error?["message"] as? String)?.contains(field) == true, "\(query): \(body)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty, "\(query): a payload file was written")
        }

        // The client `scmesh send - < FILE` uses: it streams the file, and gets the
        // refusal as its reply (not a broken upload).
        let file = a.directory.path + "/upload-source"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: 9, count: size)))
        let descriptor = open(file, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let reply = try await a.client.send(ControlRequest(cmd: "send", peer: "nosuchalias"), streaming: descriptor, length: size)
        #expect(!reply.ok)
        #expect(reply.code == "invalidArgument", "\(reply.line)")
        #expect(reply.error?.contains("nosuchalias") == true, "\(reply.line)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty)
        let outbox = try await a.call(.GET, "/api/v1/outbox")
        #expect(outbox.status == 200 && outbox.object["total"] as? Int == 0, "\(outbox.text)")
        let history = try await a.call(.GET, "/api/v1/messages?limit=5").object["messages"] as? [[String: Any]]
        #expect(history?.isEmpty == true, "\(String(describing: history))")
    }
}

extension RawTCPClient {
    /// Everything the server sends until it closes the connection, waiting at most
    /// `timeoutSeconds` for each read.
    func readUntilClosed(timeoutSeconds: Int) throws -> [UInt8] {
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return received }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw MeshError(.timedOut, "no reply within \(timeoutSeconds) s: \(String(cString: strerror(errno)))")
            }
            received += chunk[..<count]
        }
    }
}
