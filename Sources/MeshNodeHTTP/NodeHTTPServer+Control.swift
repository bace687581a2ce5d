import Foundation
import Hummingbird
import Logging
import MeshCore
import MeshNode

extension NodeHTTPServer {
    /// The run-time control routes: transports switched off and on, `dial`, the address
    /// ledger, resetting the settings, renaming and noting contacts (the socket's
    /// `transports_disable`, `transports_enable`, `dial`, `known_peers`, `settings`
    /// with `reset`, `contacts_rename`, `contacts_note`).
    func addControlRoutes(to api: RouterGroup<BasicRequestContext>) {
        api.put("transports/{name}/disabled") { request, context in
            _ = try QueryParameters(request, known: [])
            let name = try context.parameters.require("name")
            let reply = try await self.commands.transports(.disable(name))
            self.logger.notice("transport \(name) disabled through the HTTP API")
            return try Self.json(reply)
        }
        api.delete("transports/{name}/disabled") { request, context in
            _ = try QueryParameters(request, known: [])
            let name = try context.parameters.require("name")
            let reply = try await self.commands.transports(.enable(name))
            self.logger.notice("transport \(name) enabled through the HTTP API")
            return try Self.json(reply)
        }
        api.post("dial") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(
                request,
                context: context,
                allowed: ["transport", "address", "timeout_seconds"],
                required: ["transport", "address"]
            )
            for key in ["transport", "address"] where !(body[key] is String) {
                throw APIError.badRequest("\"\(key)\" must be a string")
            }
            var timeout: Double?
            if body["timeout_seconds"] != nil {
                guard let number = body["timeout_seconds"] as? NSNumber,
                    Self.strictBool(body["timeout_seconds"]) == nil,
                    number.doubleValue.isFinite
                else {
                    throw APIError.badRequest("\"timeout_seconds\" must be a number")
                }
                timeout = number.doubleValue
            }
            return try Self.json(
                await self.commands.dial(
                    DialRequest(
                        transport: body["transport"] as? String,
                        address: body["address"] as? String,
                        timeoutSeconds: timeout
                    )
                )
            )
        }
        api.get("peers/known") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.knownPeers())
        }
        api.delete("settings") { request, _ in
            _ = try QueryParameters(request, known: [])
            let reply = try await self.commands.settings(SettingsRequest(reset: true))
            self.logger.notice("run-time settings reset to the config's through the HTTP API")
            return try Self.json(reply)
        }
        api.put("contacts/{name}/alias") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(request, context: context, allowed: ["alias"], required: ["alias"])
            guard let alias = body["alias"] as? String else { throw APIError.badRequest("\"alias\" must be a string") }
            return try Self.json(
                await self.commands.contacts(.rename(alias: try context.parameters.require("name"), newAlias: alias))
            )
        }
        api.put("contacts/{name}/note") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(request, context: context, allowed: ["note"], required: ["note"])
            guard let note = body["note"] as? String else { throw APIError.badRequest("\"note\" must be a string") }
            return try Self.json(
                await self.commands.contacts(.note(peer: try context.parameters.require("name"), note: note))
            )
        }
    }
}
