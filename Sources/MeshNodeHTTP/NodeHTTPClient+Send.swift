import Foundation
import MeshCore
import MeshNode
import NIOCore
import NIOHTTP1
import NIOPosix

// Sending a message over the HTTP API, and the reply in the control socket's shape.
extension NodeHTTPClient {
    /// `send` with a raw payload: `POST /api/v1/messages?to=…`. The reply is turned
    /// into the control socket's reply shape, so callers print it the same way.
    public func send(_ request: SendRequest, payload: ByteBuffer) async throws -> ControlReply {
        try await send(request, body: .buffer(payload))
    }

    /// `send` of the `length` bytes the file descriptor `descriptor` reads next
    /// (standard input redirected from a file): each chunk goes out as soon as it is
    /// read. `progress` gets the bytes sent so far.
    public func send(
        _ request: SendRequest,
        streaming descriptor: Int32,
        length: Int,
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> ControlReply {
        try await send(request, body: .stream(descriptor: descriptor, length: length, progress: progress))
    }

    func send(_ request: SendRequest, body: Body) async throws -> ControlReply {
        var query = [("to", request.peer ?? "")]
        if let id = request.id { query.append(("message_id", id)) }
        if let expires = request.expiresSeconds { query.append(("expires_seconds", String(expires))) }
        if let wait = request.wait { query.append(("wait", String(wait))) }
        if let timeout = request.timeoutSeconds { query.append(("timeout_seconds", String(timeout))) }
        if let emergency = request.emergency { query.append(("emergency", String(emergency))) }
        let target = "/api/v1/messages?" + query.map { "\($0.0)=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
        let reply = try await self.request(
            .POST,
            target,
            contentType: "application/octet-stream",
            body: body,
            headers: [],
            authorize: true
        )
        return try Self.controlReply(reply)
    }

    /// An API reply in the control socket's shape: `{"ok":true,…}` or
    /// `{"ok":false,"code":…,"message":…,"message_id":…}`. A node's API writes that
    /// shape itself; a node of the former shape (no `ok`, errors as
    /// `{"error":{…}}`) is translated.
    public static func controlReply(_ reply: Reply) throws -> ControlReply {
        if let same = try? ControlReply(line: reply.body) { return same }
        if reply.status == 200 {
            guard reply.body.first == UInt8(ascii: "{"), reply.body.count > 2 else {
                return try ControlReply(line: Array(#"{"ok":true}"#.utf8))
            }
            return try ControlReply(line: Array(#"{"ok":true,"#.utf8) + reply.body.dropFirst())
        }
        struct Failure: Decodable {
            struct Inner: Decodable {
                var code: String
                var message: String
                var message_id: String?
            }
            var error: Inner
        }
        guard let failure = try? JSONDecoder().decode(Failure.self, from: Data(reply.body)) else {
            throw MeshError(.controlRequestFailed, "the node's HTTP reply (status \(reply.status)) is not an API reply")
        }
        return try ControlReply(
            line: ControlJSON.failure(
                failure.error.message,
                code: failure.error.code,
                messageID: failure.error.message_id.flatMap(MessageID.init(hex:))
            )
        )
    }

    static func split(_ address: String) throws -> (String, Int) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            throw MeshError(.invalidArgument, "\"\(address)\" is not host:port")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }

    static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
            ?? text
    }
}
