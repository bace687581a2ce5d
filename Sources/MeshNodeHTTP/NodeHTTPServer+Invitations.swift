import Foundation
import Hummingbird
import MeshCore
import MeshNode

/// The reply to `GET /api/v1/invitation`: `invite`'s reply and the link as a QR code
/// in SVG (what the dashboard shows).
struct InvitationReply: Encodable {
    /// The invitation, as `invite` replies on the socket.
    var invite: InviteReply
    /// ``InviteReply/link`` as a QR code (``QRCode/svg(quietZone:title:)``).
    var qrSVG: String

    private enum CodingKeys: String, CodingKey { case qrSVG = "qr_svg" }

    func encode(to encoder: any Encoder) throws {
        try invite.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(qrSVG, forKey: .qrSVG)
    }
}

extension NodeHTTPServer {
    /// The invitation and topic routes: `invitation`, `invitations`, `join`, `topics`
    /// (the socket's `invite`, `invites`, `invite_revoke`, `join`, `topics`, `subscribe`,
    /// `unsubscribe`, `publish`).
    func addInvitationAndTopicRoutes(to api: RouterGroup<BasicRequestContext>) {
        api.get("invitation") { request, _ in
            let query = try QueryParameters(request, known: ["expires_seconds"])
            let invite = try await self.commands.invite(expiresSeconds: try query.double("expires_seconds"))
            let code = try QRCode.encode(Array(invite.link.utf8), errorCorrection: .low)
            return try Self.json(
                InvitationReply(
                    invite: invite,
                    qrSVG: code.svg(title: "invitation to \(invite.name ?? invite.peer.short)")
                )
            )
        }
        api.get("invitations") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.invites())
        }
        api.delete("invitations/{id}") { request, context in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.invites(revoke: try context.parameters.require("id")))
        }
        api.post("join") { request, context in
            _ = try QueryParameters(request, known: [])
            let body = try await Self.jsonObject(
                request,
                context: context,
                allowed: ["invitation", "alias"],
                required: ["invitation"]
            )
            for key in body.keys where !(body[key] is String) {
                throw APIError.badRequest("\"\(key)\" must be a string")
            }
            return try Self.json(
                await self.commands.join(
                    JoinRequest(invitation: body["invitation"] as? String, alias: body["alias"] as? String)
                )
            )
        }
        api.get("topics") { request, _ in
            _ = try QueryParameters(request, known: [])
            return try Self.json(await self.commands.topics())
        }
        api.post("topics/subscribe") { request, context in
            let topic = try await Self.topicRequest(request, context: context, publishing: false).topic
            return try Self.json(await self.commands.subscribe(topic: topic))
        }
        api.post("topics/unsubscribe") { request, context in
            let topic = try await Self.topicRequest(request, context: context, publishing: false).topic
            return try Self.json(await self.commands.unsubscribe(topic: topic))
        }
        api.post("topics/publish") { request, context in
            try Self.json(
                await self.commands.publish(try await Self.topicRequest(request, context: context, publishing: true))
            )
        }
    }

    /// A topic command's body: `{"topic": …}`, and when `publishing` `text` or `payload_base64`.
    static func topicRequest(
        _ request: Request,
        context: BasicRequestContext,
        publishing: Bool
    ) async throws -> PublishRequest {
        _ = try QueryParameters(request, known: [])
        let allowed = publishing ? ["topic", "text", "payload_base64"] : ["topic"]
        let body = try await jsonObject(request, context: context, allowed: allowed, required: ["topic"])
        for key in body.keys where !(body[key] is String) {
            throw APIError.badRequest("\"\(key)\" must be a string")
        }
        return PublishRequest(
            topic: body["topic"] as? String,
            text: body["text"] as? String,
            payloadBase64: body["payload_base64"] as? String
        )
    }
}
