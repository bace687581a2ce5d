import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeshCore
import MeshNode
import MeshStore
import NIOCore

extension NodeHTTPServer {
    /// Every route; `openapi.json` lists them.
    func addRoutes(to router: Hummingbird.Router<BasicRequestContext>) {
        let api = router.group("api/v1")
        api.get("status") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.status())
        }
        api.get("peers") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.peers())
        }
        api.get("transports") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(TransportsReply(await self.commands.status()))
        }
        api.get("routes") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.routes())
        }
        api.post("messages") { request, context in try await self.send(request, context: context) }
        api.get("messages") { request, _ in
            let query = try QueryParameters(request, known: ["peer", "limit"])
            return try Self.json(
                await self.commands.history(MessageQuery(peer: query.string("peer"), limit: query.int("limit")))
            )
        }
        api.get("messages/{id}") { request, context in
            _ = try QueryParameters(request, known: [])
            let id = try context.parameters.require("id")
            return try Self.json(await self.commands.trace(id: id))
        }
        api.get("outbox") { request, _ in
            let query = try QueryParameters(request, known: ["peer", "limit"])
            return try Self.json(
                await self.commands.outbox(MessageQuery(peer: query.string("peer"), limit: query.int("limit")))
            )
        }
        api.get("inbox") { request, _ in
            let query = try QueryParameters(request, known: ["after", "limit", "payloads"])
            return try Self.json(
                await self.commands.inbox(
                    InboxRequest(after: query.int("after"), limit: query.int("limit"), payloads: query.bool("payloads"))
                )
            )
        }
        api.get("inbox/{seq}/payload") { request, context in
            _ = try QueryParameters(request, known: [])
            let text = try context.parameters.require("seq")
            guard let sequence = Int(text) else {
                throw APIError.badRequest("the inbox sequence number must be an integer, got \"\(text.prefix(80))\"")
            }
            let payload: StoreInbox.Payload
            do {
                payload = try await self.commands.inboxPayload(sequence: sequence)
            } catch let error as MeshError where error.code == .invalidArgument {
                throw APIError(.notFound, code: "notFound", error.message)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            headers[HTTPField.Name("X-Message-ID")!] = payload.id.hex
            headers[HTTPField.Name("X-From")!] = payload.from.hex
            return Response(status: .ok, headers: headers, body: Self.body(of: payload))
        }
        api.get("contacts") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.contacts(.list))
        }
        api.post("contacts") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(request, context: context, allowed: ["alias", "peer", "note"])
            for key in body.keys where !(body[key] is String) {
                throw APIError.badRequest("\"\(key)\" must be a string")
            }
            return try Self.json(
                await self.commands.contacts(
                    .add(alias: body["alias"] as? String, peer: body["peer"] as? String, note: body["note"] as? String)
                )
            )
        }
        api.delete("contacts/{name}") { request, context in
            _ = try QueryParameters(request, known: [])
            return try Self.json(
                await self.commands.contacts(.remove(try context.parameters.require("name")))
            )
        }
        api.put("contacts/{name}/blocked") { request, context in
            _ = try QueryParameters(request, known: [])
            return try Self.json(
                await self.commands.contacts(.block(peer: try context.parameters.require("name")))
            )
        }
        api.delete("contacts/{name}/blocked") { request, context in
            _ = try QueryParameters(request, known: [])
            return try Self.json(
                await self.commands.contacts(.unblock(peer: try context.parameters.require("name")))
            )
        }
        api.put("contacts-allow-only") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(request, context: context, allowed: ["on"], required: ["on"])
            guard let on = Self.strictBool(body["on"]) else {
                throw APIError.badRequest("\"on\" must be true or false")
            }
            return try Self.json(await self.commands.contacts(.allowOnly(on)))
        }
        api.get("settings") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.settings(SettingsRequest()))
        }
        api.patch("settings") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(
                request,
                context: context,
                allowed: [
                    "relay_enabled", "relay_max_per_hour", "relay_neighbour_share", "relay_battery_floor_percent",
                    "discovery_mode",
                ]
            )
            var change = SettingsRequest()
            if body["relay_enabled"] != nil {
                guard let enabled = Self.strictBool(body["relay_enabled"]) else {
                    throw APIError.badRequest("\"relay_enabled\" must be true or false")
                }
                change.relayEnabled = enabled
            }
            for key in ["relay_max_per_hour", "relay_battery_floor_percent"] where body[key] != nil {
                guard let number = body[key] as? NSNumber, Self.strictBool(body[key]) == nil,
                    let value = Int(exactly: number.doubleValue)
                else {
                    throw APIError.badRequest("\"\(key)\" must be a whole number")
                }
                if key == "relay_max_per_hour" {
                    change.relayMaxPerHour = value
                } else {
                    change.relayBatteryFloorPercent = value
                }
            }
            if body["relay_neighbour_share"] != nil {
                guard let number = body["relay_neighbour_share"] as? NSNumber,
                    Self.strictBool(body["relay_neighbour_share"]) == nil,
                    number.doubleValue.isFinite
                else {
                    throw APIError.badRequest("\"relay_neighbour_share\" must be a number")
                }
                change.relayNeighbourShare = number.doubleValue
            }
            if body["discovery_mode"] != nil {
                guard let mode = body["discovery_mode"] as? String else {
                    throw APIError.badRequest("\"discovery_mode\" must be a string: normal, cautious or paranoid")
                }
                change.discoveryMode = mode
            }
            let reply = try await self.commands.settings(change)
            if let enabled = change.relayEnabled {
                self.logger.notice("relay switched \(enabled ? "on" : "off") through the HTTP API")
            }
            if change.changesBudgets {
                self.logger.notice(
                    "relay budgets changed through the HTTP API: \(reply.relayMaxPerHour) an hour, neighbour share \(reply.relayNeighbourShare), battery floor \(reply.relayBatteryFloorPercent) %"
                )
            }
            if let mode = change.discoveryMode {
                self.logger.notice("discovery mode set to \(mode) through the HTTP API")
            }
            return try Self.json(reply)
        }
        addInvitationAndTopicRoutes(to: api)
        api.get("events") { request, _ in try self.eventStream(request) }
        api.get("openapi.json") { _, _ in
            try Self.resource("openapi.json", contentType: "application/json")
        }
        api.post("session/login") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(LoginReply(token: self.sessions.makeLogin(), expiresSeconds: 300))
        }
        api.post("session") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(request, context: context, allowed: ["token"], required: ["token"])
            guard let login = body["token"] as? String, !(body["token"] is NSNumber),
                let session = self.sessions.exchange(login)
            else {
                throw APIError(
                    .unauthorized,
                    code: "unauthorized",
                    "this login link is unknown, used or expired; run `scmesh dashboard` for a new one"
                )
            }
            var response = Response(status: .noContent)
            // Host-only (no Domain), Path=/, HttpOnly, SameSite=Strict, and gone from the
            // browser when the session ends at the latest. Not `__Host-`/Secure: the
            // node serves plain http, where browsers refuse Secure cookies.
            let name = AuthMiddleware<BasicRequestContext>.cookieName(port: self.origin.port ?? 0)
            response.setCookie(
                Cookie(
                    name: name,
                    value: session,
                    maxAge: Int(self.sessions.absoluteLifetime.components.seconds),
                    path: "/",
                    httpOnly: true,
                    sameSite: .strict
                )
            )
            return response
        }
        router.get("metrics") { request, _ in
            _ = try QueryParameters(request, known: [])
            let text = self.metrics.render(status: try await self.commands.status(), peers: await self.commands.peers())
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        router.get("/") { _, _ in try Self.resource("dashboard.html", contentType: "text/html; charset=utf-8") }
    }

    /// `POST /api/v1/messages`: a JSON body is a send request (the socket's fields:
    /// `peer`, `text` or `payload_base64`, `id`, `expires_seconds`, `wait`,
    /// `timeout_seconds`); any other body is the raw payload, with the rest in the query
    /// (`to`, `id`, `expires_seconds`, `wait`, `timeout_seconds`).
    func send(_ request: Request, context: BasicRequestContext) async throws -> Response {
        var request = request
        let limit = node.configuration.routerConfiguration.maxMessageSize
        let isJSON = request.headers[.contentType].map { $0.lowercased().hasPrefix("application/json") } ?? false
        if isJSON {
            _ = try QueryParameters(request, known: [])
            let body = try await Self.collect(&request, upTo: limit / 3 * 4 + 65_536)
            _ = try Self.parseObject(body)
            switch ControlHandler.parse(body, implied: "send") {
            case .success(.send(let parsed)): return try Self.json(await commands.send(parsed))
            case .success: throw APIError.badRequest("this route only sends; \"cmd\" must be \"send\" or absent")
            case .failure(let message): throw APIError.badRequest(message)
            }
        }
        let query = try QueryParameters(
            request,
            known: ["to", "id", "expires_seconds", "wait", "timeout_seconds", "emergency"]
        )
        guard let to = query.string("to") else {
            throw APIError.badRequest(
                "a raw body needs ?to=<peer ID or alias> (or send Content-Type: application/json with \"peer\")"
            )
        }
        let send = SendRequest(
            peer: to,
            id: query.string("id"),
            expiresSeconds: try query.double("expires_seconds"),
            wait: try query.bool("wait"),
            timeoutSeconds: try query.double("timeout_seconds"),
            emergency: try query.bool("emergency")
        )
        // A large body with a declared length goes straight into the outbox's payload
        // file while it arrives (hashed while it syncs); the rest is collected. The peer
        // and the parameters are checked first: a bad send is refused before its body
        // is read, and nothing is written.
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared >= commands.uploadThreshold {
            guard declared <= limit else { throw Self.tooLarge(limit, declared: declared) }
            let checked = try await commands.checkSend(send, declaredBytes: declared)
            let stored = try await commands.receivePayload(request.body, declaredBytes: declared)
            return try Self.json(await commands.send(checked, stored: stored))
        }
        let payload = try await Self.collectPayload(&request, upTo: limit)
        return try Self.json(await commands.send(send, rawPayload: payload))
    }

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

    /// The body, at most `limit` bytes (a larger one is a 413 naming the limit).
    static func collect(_ request: inout Request, upTo limit: Int) async throws -> [UInt8] {
        let refusal = tooLarge(limit)
        // Refused before reading when the length is declared.
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw tooLarge(limit, declared: declared)
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
    static func tooLarge(_ limit: Int, declared: Int? = nil) -> APIError {
        let size = declared.map { " (\($0) bytes)" } ?? ""
        return APIError(
            .contentTooLarge,
            code: "payloadTooLarge",
            "the body\(size) is larger than \(limit) bytes (max_message_size); raise max_message_size to send more"
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
        let object = try parseObject(try await collect(&request, upTo: 1 << 20))
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

    /// A `200` with `value` as the API's JSON (snake_case keys, ISO 8601 dates).
    static func json(_ value: some Encodable) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try ControlJSON.encoder().encode(value)))
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

/// `GET /api/v1/transports`: each transport's state, priority, addresses and counters.
struct TransportsReply: Codable, Sendable {
    struct Entry: Codable, Sendable {
        var name: String
        var priority: Int
        var state: TransportState
        var reason: String?
        var addresses: [String]
        var counters: TransportCounters
        var refusals: [String: Int]
    }

    var transports: [Entry]

    init(_ status: StatusReply) {
        transports = status.transports.map { transport in
            Entry(
                name: transport.name,
                priority: transport.priority,
                state: transport.state,
                reason: transport.reason,
                addresses: transport.addresses,
                counters: status.stats.transports[transport.name] ?? TransportCounters(),
                refusals: status.transportCounters?[transport.name] ?? [:]
            )
        }
    }
}

/// `POST /api/v1/session/login`: a one-time dashboard login token.
struct LoginReply: Codable, Sendable {
    var token: String
    var expiresSeconds: Int
}

extension NodeHTTPServer {
    /// The bytes of an embedded resource file, by its name in `Resources/`.
    static func embeddedResource(_ name: String) -> [UInt8]? {
        switch name {
        case "dashboard.html": PackageResources.dashboard_html
        case "openapi.json": PackageResources.openapi_json
        default: nil
        }
    }
}
