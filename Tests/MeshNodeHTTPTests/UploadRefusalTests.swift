import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOHTTP1
import TestSupport
import Testing

// A streamed upload names its peer and parameters in the query: they are checked before
// the body is read, so a send that cannot go is refused at once, with the API's JSON
// error, and nothing of its body is written.

// Serialized: each test holds a node and pushes megabytes through a raw socket; one at a
// time keeps the load on two cores modest. (The socket's blocking calls run on threads of
// their own, see `partialUpload`.)
@Suite("HTTP uploads refused before their body is read", .serialized)
struct UploadRefusalTests {
    @Test(
        "a 10 MiB upload to an unknown alias, or with a bad parameter, is refused with a JSON error before its body is read; nothing is written"
    )
    func badUploadsAreRefusedFirst() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let payloads = a.directory.path + "/store.sqlite-payloads"
        let size = 10 << 20
        let peer = strangerPeerHex
        let cases: [(query: String, field: String)] = [
            ("to=nosuchalias", "no contact has the alias \"nosuchalias\""),
            ("to=\(peer)&expires_seconds=-5", "\"expires_seconds\""),
            ("to=\(peer)&id=xyz", "\"id\" must be a message ID"),
            ("to=\(peer)&timeout_seconds=0", "\"timeout_seconds\""),
        ]
        for (query, field) in cases {
            let (status, code, message) = try await Self.partialUpload(to: a, query: query, declaring: size)
            #expect(status == 400, "\(query): \(message)")
            #expect(code == "invalidArgument", "\(query): \(message)")
            #expect(message.contains(field), "\(query): \(message)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty,
                "\(query): a payload file was written"
            )
        }

        // The client `scmesh send - < FILE` uses: it streams the file, and gets the
        // refusal as its reply (not a broken upload).
        let file = a.directory.path + "/upload-source"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: 9, count: size)))
        let descriptor = open(file, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let reply = try await a.client.send(SendRequest(peer: "nosuchalias"), streaming: descriptor, length: size)
        #expect(!reply.ok)
        #expect(reply.code == "invalidArgument", "\(reply.line)")
        #expect(reply.error?.contains("nosuchalias") == true, "\(reply.line)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty)
        let outbox = try await a.call(.GET, "/api/v1/outbox")
        #expect(outbox.status == 200 && outbox.object["total"] as? Int == 0, "\(outbox.text)")
        let history = try await a.call(.GET, "/api/v1/messages?limit=5").object["messages"] as? [[String: Any]]
        #expect(history?.isEmpty == true, "\(String(describing: history))")
    }

    @Test(
        "an upload the router would refuse for its size — no room in the outbox, the emergency limit spent, relaying off — is refused before its body is read; nothing is written"
    )
    func uploadsThatCannotBeQueuedAreRefusedFirst() async throws {
        let size = 10 << 20
        let peer = strangerPeerHex
        let a = try await HTTPNode.start(
            network: uniqueNetwork(),
            overrides: ["store.outbox_max_bytes_per_peer=1048576", "flood.emergency_per_hour=1"]
        )
        defer { Task { try await a.stop() } }
        let payloads = a.directory.path + "/store.sqlite-payloads"

        var (status, code, message) = try await Self.partialUpload(to: a, query: "to=\(peer)", declaring: size)
        #expect(status == 503 && code == "storeFull", "\(message)")
        #expect(message.contains("outbox full") && message.contains("1048576"), "\(message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty)

        // One emergency message is this node's hourly allowance; the next, large, is refused unread.
        let first = try await a.call(
            .POST,
            "/api/v1/messages",
            json: #"{"peer": "\#(peer)", "text": "help", "emergency": true}"#
        )
        #expect(first.status == 200, "\(first.text)")
        (status, code, message) = try await Self.partialUpload(
            to: a,
            query: "to=\(peer)&emergency=true",
            declaring: 512 << 10
        )
        #expect(status == 429 && code == "rateLimited", "\(message)")
        #expect(message.contains("emergency_per_hour"), "\(message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: payloads).isEmpty)
        // Still room for an ordinary message of that size: the check spent nothing.
        (status, code, message) = try await Self.partialUpload(
            to: a,
            query: "to=\(peer)",
            declaring: 512 << 10,
            sendingAll: true
        )
        #expect(status == 200, "\(message)")

        let b = try await HTTPNode.start(network: uniqueNetwork(), overrides: ["relay.enabled=false"])
        defer { Task { try await b.stop() } }
        (status, code, message) = try await Self.partialUpload(to: b, query: "to=\(peer)", declaring: size)
        #expect(status == 409 && code == "relayDisabled", "\(message)")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: b.directory.path + "/store.sqlite-payloads").isEmpty
        )
    }

    /// POSTs a raw body declaring `declaring` bytes to `/api/v1/messages?query`, sending
    /// only its first 64 KiB unless `sendingAll` (a reply then shows the node answered
    /// without reading the body); returns the status, and the error's code and message
    /// (or the whole body when it is not an error). The socket's blocking write and reads
    /// run on a thread of their own: the node answering is in this process, and a
    /// cooperative-pool thread blocked on it could be one the node needs.
    static func partialUpload(
        to node: HTTPNode,
        query: String,
        declaring size: Int,
        sendingAll: Bool = false
    ) async throws -> (status: Int, code: String?, message: String) {
        let (host, port) = try #require(node.address.split(separator: ":").map(String.init).splitHostPort())
        let head =
            "POST /api/v1/messages?\(query) HTTP/1.1\r\nHost: \(node.address)\r\nAuthorization: Bearer \(node.token)\r\n"
            + "Connection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n"
        let request = Array(head.utf8) + [UInt8](repeating: 7, count: sendingAll ? size : min(size, 64 << 10))
        let reply = try await onOwnThread {
            let socket = try RawTCPClient(host: host, port: port)
            defer { socket.close() }
            try socket.write(request)
            return try socket.readUntilClosed(timeoutSeconds: 30)
        }
        let response = String(decoding: reply, as: UTF8.self)
        let status = Int(response.dropFirst("HTTP/1.1 ".count).prefix(3)) ?? 0
        let body = String(response[(response.range(of: "\r\n\r\n")?.upperBound ?? response.endIndex)...])
        let error = (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
        return (status, error["code"] as? String, error["message"] as? String ?? body)
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
