import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeshCore
import MeshNode
import MeshStore
import NIOCore

// Request bodies read with limits, JSON checks and response bodies, for the routes.
extension NodeHTTPServer {
    /// An inbox payload as a response body: a large one read from its file in pieces
    /// of 1 MiB as the client takes them, never whole in memory.
    static func body(of payload: StoreInbox.Payload) -> ResponseBody {
        switch payload.source {
        case .bytes(let bytes):
            return ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        case .file(let file):
            return ResponseBody(contentLength: file.byteCount) { writer in
                var offset = 0
                while offset < file.byteCount {
                    let piece = try await file.read(at: offset, upTo: 1 << 20)
                    offset += piece.count
                    try await writer.write(ByteBuffer(bytes: piece))
                }
                try await writer.finish(nil)
            }
        }
    }

    /// The body, at most `limit` bytes (a larger one is a 413 naming the limit, the
    /// moment the body passes it). `isSend`: the body is a message, so the refusal names
    /// `max_message_size` and says that nothing was queued.
    static func collect(_ request: inout Request, upTo limit: Int, isSend: Bool = true) async throws -> [UInt8] {
        let refusal = tooLarge(limit, isSend: isSend)
        // Refused before reading when the length is declared.
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw tooLarge(limit, declared: declared, isSend: isSend)
        }
        do {
            let buffer = try await request.collectBody(upTo: limit)
            return Array(buffer: buffer)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw refusal
        } catch is NIOTooManyBytesError {
            throw refusal
        }
    }

    /// The 413 for a body over `limit` bytes; its size when the request declared it.
    /// For a message (`isSend`) it names `max_message_size` and says nothing was queued.
    static func tooLarge(_ limit: Int, declared: Int? = nil, isSend: Bool = true) -> APIError {
        let size = declared.map { " (\($0) bytes)" } ?? ""
        let advice = isSend ? " (max_message_size): nothing was queued; raise max_message_size to send more" : ""
        return APIError(
            .contentTooLarge,
            code: "payloadTooLarge",
            "the body\(size) is larger than \(limit) bytes\(advice)"
        )
    }

    /// A raw payload body, at most `limit` bytes, as ``collect(_:upTo:)`` but with one
    /// copy: with a `Content-Length` (what `scmesh send -` sends), each part of the
    /// body is appended as it arrives to an array sized for the whole, instead of being
    /// gathered in a growing buffer and copied out of it.
    static func collectPayload(_ request: inout Request, upTo limit: Int) async throws -> [UInt8] {
        guard let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared >= 0 else {
            return try await collect(&request, upTo: limit)
        }
        guard declared <= limit else { throw tooLarge(limit, declared: declared) }
        var payload: [UInt8] = []
        payload.reserveCapacity(declared)
        for try await part in request.body {
            // HTTP/1.1 framing stops the body at Content-Length; this is a second guard.
            guard payload.count + part.readableBytes <= limit else { throw tooLarge(limit) }
            part.withUnsafeReadableBytes { payload.append(contentsOf: $0) }
        }
        return payload
    }

    /// The body as a JSON object whose keys are all in `allowed`.
    static func jsonObject(
        _ request: Request,
        context: BasicRequestContext,
        allowed: [String],
        required: [String] = []
    ) async throws -> [String: Any] {
        var request = request
        try requireJSON(request)
        let object = try parseObject(try await collect(&request, upTo: 1 << 20, isSend: false))
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError.badRequest(
                "unknown field \"\(unknown.prefix(80))\" (known fields: \(allowed.joined(separator: ", ")))"
            )
        }
        if let missing = required.first(where: { object[$0] == nil }) {
            throw APIError.badRequest("the body needs \"\(missing)\"")
        }
        return object
    }

    /// Throws a 415 unless the request says its body is `application/json`.
    static func requireJSON(_ request: Request) throws {
        let type = request.headers[.contentType]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
            .lowercased()
        guard type == "application/json" else {
            throw APIError(
                .unsupportedMediaType,
                code: "unsupportedMediaType",
                "this route takes a JSON body: send Content-Type: application/json (got \(type.map { "\"\($0.prefix(80))\"" } ?? "none"))"
            )
        }
    }

    /// A JSON `true` or `false` (not a number: Foundation bridges `0` and `1` to Bool).
    static func strictBool(_ value: Any?) -> Bool? {
        guard let value, String(describing: type(of: value)).contains("Boolean") || type(of: value) == Bool.self,
            let bool = value as? Bool
        else { return nil }
        return bool
    }

    static func parseObject(_ bytes: [UInt8]) throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any] else {
            throw APIError.badRequest("the body must be one JSON object")
        }
        return object
    }

    /// A `200` with `value` as the API's JSON (snake_case keys, ISO 8601 dates), with
    /// `"ok":true` first, as on the control socket.
    static func json(_ value: some Encodable) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try ControlJSON.success(value)))
        )
    }

    /// A file of this module's resources (compiled into the code, so an installed
    /// binary has them wherever it is).
    static func resource(_ name: String, contentType: String) throws -> Response {
        guard let data = embeddedResource(name) else {
            throw APIError(.internalServerError, code: "internal", "the node's \(name) is missing from its resources")
        }
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
