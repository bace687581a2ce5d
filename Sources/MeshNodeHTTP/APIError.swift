import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeshCore
import MeshNode

/// The HTTP API's error, in the one error shape of the socket and the API:
/// `{"ok":false,"code":"invalidArgument","message":"…","message_id":"…"}` (`message_id`
/// only when the failure concerns a message with an ID). `code` is a `MeshError.Code`
/// name, or one of the API's own: `unauthorized`, `notFound`, `badRequest`,
/// `payloadTooLarge`, `internal`.
struct APIError: Error {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var messageID: MessageID?

    init(_ status: HTTPResponse.Status, code: String, _ message: String, messageID: MessageID? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.messageID = messageID
    }

    /// 400 with code `badRequest`.
    static func badRequest(_ message: String) -> APIError {
        APIError(.badRequest, code: "badRequest", message)
    }

    /// An error from the command layer, with the HTTP status that fits its code.
    init(_ error: MeshError, messageID: MessageID? = nil) {
        // A bad or expired invitation (MeshCrypto's codes) is the client's to fix.
        let status: HTTPResponse.Status =
            switch error.code {
            case .invalidArgument, .invalidConfiguration: .badRequest
            case _ where ["invitationMalformed", "invitationExpired"].contains(error.code.name): .badRequest
            case .unknownMessage: .notFound
            case .messageTooLarge: .contentTooLarge
            case .rateLimited: .tooManyRequests
            // Not 5xx: the node works; the message's state (not delivered yet, or
            // failed) is the answer, and the message stays in the outbox or history;
            // likewise a `dial` whose remote did not answer or failed its handshake.
            case .timedOut, .deliveryFailed, .relayDisabled, .noRoute, .dialFailed, .handshakeFailed: .conflict
            default: .serviceUnavailable
            }
        self.init(status, code: error.code.name, error.message, messageID: messageID)
    }

    /// The error as a response, in the shape the control socket uses too:
    /// `{"ok":false,"code":…,"message":…,"message_id":…}`, with the former
    /// `"error":{"code","message","message_id"}` beside it (deprecated).
    var response: Response {
        struct Inner: Encodable {
            var code: String
            var message: String
            var messageID: MessageID?
        }
        let bytes = ControlJSON.failure(
            message,
            code: code,
            messageID: messageID,
            deprecatedError: Inner(code: code, message: message, messageID: messageID)
        )
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if status == .unauthorized { headers[.wwwAuthenticate] = #"Bearer realm="scmesh""# }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

/// Turns every error a route throws (and Hummingbird's own: unknown route, body too
/// large) into the one JSON error shape.
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Every route's path pattern (`{x}` matches one segment) and its methods, for 405.
    let routes: [(pattern: [Substring], methods: [String])]

    /// The methods `path` has a route for (empty: no such path).
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        return routes.filter { route in
            route.pattern.count == segments.count
                && zip(route.pattern, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }.flatMap(\.methods)
    }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response
        } catch let failure as ControlHandler.MessageFailure {
            return APIError(failure.error, messageID: failure.messageID).response
        } catch let error as MeshError {
            return APIError(error).response
        } catch let error as HTTPError where error.status == .notFound && !methods(for: request.uri.path).isEmpty {
            let allowed = methods(for: request.uri.path).map { $0.uppercased() }.sorted()
            var response = APIError(
                .methodNotAllowed,
                code: "methodNotAllowed",
                "\(request.uri.path) takes \(allowed.joined(separator: ", ")), not \(request.method)"
            ).response
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch let error as HTTPError {
            let code: String =
                switch error.status {
                case .notFound: "notFound"
                case .contentTooLarge: "payloadTooLarge"
                case .badRequest: "badRequest"
                case .methodNotAllowed: "methodNotAllowed"
                default: "http\(error.status.code)"
                }
            let message =
                error.status == .notFound
                ? "no route \(request.method) \(request.uri.path); GET /api/v1/openapi.json lists the API"
                : (error.body ?? error.status.reasonPhrase)
            return APIError(error.status, code: code, message).response
        } catch {
            context.logger.error(
                "HTTP API request failed",
                metadata: ["path": "\(request.uri.path)", "error": "\(error)"]
            )
            return APIError(.internalServerError, code: "internal", "the node could not answer \(request.uri.path)")
                .response
        }
    }
}
