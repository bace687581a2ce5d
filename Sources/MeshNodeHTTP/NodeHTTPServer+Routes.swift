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
        addConversationRoutes(to: api)
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
            return try Self.json(
                HTTPTransportsReply(
                    await self.commands.status(),
                    disabled: await self.commands.transports(.list).disabled
                )
            )
        }
        api.get("routes") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.routes())
        }
        api.post("messages") { request, context in try await self.send(request, context: context) }
        api.get("messages") { request, _ in
            let query = try QueryParameters(request, known: ["peer", "limit", "grep"])
            return try Self.json(
                await self.commands.history(
                    MessageQuery(peer: query.string("peer"), limit: query.int("limit"), grep: query.string("grep"))
                )
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
            let query = try QueryParameters(request, known: ["after", "limit", "payloads", "unread"])
            return try Self.json(
                await self.commands.inbox(
                    InboxRequest(
                        after: query.int("after"),
                        limit: query.int("limit"),
                        payloads: query.bool("payloads"),
                        unread: query.bool("unread")
                    )
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
        api.put("contacts/{name}/muted") { request, context in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.contacts(.mute(peer: try context.parameters.require("name"))))
        }
        api.delete("contacts/{name}/muted") { request, context in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.contacts(.unmute(peer: try context.parameters.require("name"))))
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
        addControlRoutes(to: api)
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
            let text = self.metrics.render(
                status: try await self.commands.status(),
                peers: await self.commands.peers(),
                power: try? self.commands.power(PowerRequest())
            )
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
            known: ["to", "message_id", "id", "expires_seconds", "wait", "timeout_seconds", "emergency"]
        )
        guard let to = query.string("to") else {
            throw APIError.badRequest(
                "a raw body needs ?to=<peer ID or alias> (or send Content-Type: application/json with \"peer\")"
            )
        }
        let send = SendRequest(
            peer: to,
            id: query.string("message_id") ?? query.string("id"),
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
}

/// `GET /api/v1/transports`: each transport's state, priority, addresses and counters,
/// and the transports switched off at run time.
struct HTTPTransportsReply: Codable, Sendable {
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
    var disabled: [String]

    init(_ status: StatusReply, disabled: [String]) {
        self.disabled = disabled
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
