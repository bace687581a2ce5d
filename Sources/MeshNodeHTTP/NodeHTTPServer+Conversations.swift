import Hummingbird
import MeshNode

extension NodeHTTPServer {
    /// `GET /api/v1/conversations` (every peer with messages, with unread counts) and
    /// `GET /api/v1/conversations/{peer}` (the messages both ways, oldest first).
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
    }
}
