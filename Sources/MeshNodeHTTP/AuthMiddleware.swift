import HTTPTypes
import Hummingbird

/// Lets a request through only with `Authorization: Bearer <DATA-DIR/api.token>` or
/// a dashboard session cookie; else 401 in the API's error shape. Two paths are
/// open: the dashboard page itself (`/`, static, no data) and the exchange of a
/// one-time login token for a session (`POST /api/v1/session`).
struct AuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    let sessions: DashboardSessions

    /// The session cookie's name.
    static var cookieName: String { "scmesh_session" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        if (path == "/" || path == "/index.html") && request.method == .get
            || path == "/api/v1/session" && request.method == .post
        {
            return try await next(request, context)
        }
        if let header = request.headers[.authorization] {
            let prefix = "Bearer "
            guard header.hasPrefix(prefix), APIToken.matches(header.dropFirst(prefix.count), token) else {
                throw APIError(.unauthorized, code: "unauthorized", "the bearer token is not this node's; use the token in DATA-DIR/api.token")
            }
            return try await next(request, context)
        }
        if let session = request.cookies[Self.cookieName]?.value, sessions.isValid(session[...]) {
            return try await next(request, context)
        }
        throw APIError(
            .unauthorized, code: "unauthorized",
            "this API needs \"Authorization: Bearer <token>\" with the token in DATA-DIR/api.token (or a dashboard session: `scmesh dashboard`)")
    }
}
