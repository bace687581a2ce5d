import Foundation
import Hummingbird
import MeshNode

extension NodeHTTPServer {
    /// `GET /api/v1/conversations` (every peer with messages, with unread counts),
    /// `GET /api/v1/conversations/{peer}` (the messages both ways, oldest first) and
    /// `POST /api/v1/read` (the socket's `read`: `{"ids": [...]}`, or `{"all": true}`
    /// with an optional `"peer"`).
    func addConversationRoutes(to api: RouterGroup<BasicRequestContext>) {
        api.get("conversations") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.conversations())
        }
        api.get("conversations/{peer}") { request, context in
            let query = try QueryParameters(request, known: ["limit"])
            let peer = try context.parameters.require("peer")
            return try Self.json(
                await self.commands.conversation(MessageQuery(peer: peer, limit: query.int("limit")))
            )
        }
        api.post("read") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(request, context: context, allowed: ["ids", "all", "peer"])
            var read = ReadRequest()
            if let ids = body["ids"] {
                guard let list = ids as? [Any], let strings = list as? [String] else {
                    throw APIError.badRequest("\"ids\" must be a list of message IDs (strings)")
                }
                read.ids = strings
            }
            if body["all"] != nil {
                guard let all = Self.strictBool(body["all"]) else {
                    throw APIError.badRequest("\"all\" must be true or false")
                }
                read.all = all
            }
            if body["peer"] != nil {
                guard let peer = body["peer"] as? String else { throw APIError.badRequest("\"peer\" must be a string") }
                read.peer = peer
            }
            return try Self.json(await self.commands.markRead(read))
        }
    }
}
