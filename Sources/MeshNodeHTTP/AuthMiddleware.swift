import Foundation
import HTTPTypes
import Hummingbird
import MeshNode

/// Lets a request through only with `Authorization: Bearer <DATA-DIR/api.token>` or
/// a dashboard session cookie; else 401 in the API's error shape. Two paths are
/// open: the dashboard page itself (`/`, static, no data) and the exchange of a
/// one-time login token for a session (`POST /api/v1/session`).
///
/// A state-changing request (any method but GET, HEAD and OPTIONS) must also come
/// from the node's own origin (``RequestOrigin``): a browser page on another port of
/// the same host would otherwise ride on the session cookie, which browsers send to
/// every port of a host. Such a request is a 403 `forbiddenOrigin`.
struct AuthMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    let sessions: DashboardSessions
    let origin: RequestOrigin

    /// The session cookie's name for the node listening on `port`: one per node, so
    /// two nodes on one host never overwrite each other's session.
    static func cookieName(port: Int) -> String { "scmesh_session_\(port)" }

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        let changesState = ![.get, .head, .options].contains(request.method)
        if (path == "/" || path == "/index.html") && request.method == .get {
            return try await next(request, context)
        }
        if path == "/api/v1/session" && request.method == .post {
            // The exchange sets a cookie: it must come from the dashboard page itself.
            try origin.check(request, fromBrowser: true)
            return try await next(request, context)
        }
        if let header = request.headers[.authorization] {
            let prefix = "Bearer "
            guard header.hasPrefix(prefix), APIToken.matches(header.dropFirst(prefix.count), token) else {
                throw APIError(
                    .unauthorized,
                    code: "unauthorized",
                    "the bearer token is not this node's; use the token in DATA-DIR/api.token"
                )
            }
            if changesState { try origin.check(request, fromBrowser: false) }
            return try await next(request, context)
        }
        if let port = origin.port, let session = request.cookies[Self.cookieName(port: port)]?.value,
            sessions.isValid(session[...])
        {
            if changesState { try origin.check(request, fromBrowser: true) }
            return try await next(request, context)
        }
        throw APIError(
            .unauthorized,
            code: "unauthorized",
            "this API needs \"Authorization: Bearer <token>\" with the token in DATA-DIR/api.token (or a dashboard session: `scmesh dashboard`)"
        )
    }
}

/// Whether a state-changing request comes from the node's own origin
/// (`http://<bound address>`, and `http://localhost:<port>` on loopback).
///
/// - `Origin`, when present, must be one of the node's own.
/// - Without it, `Referer`, when present, must start with one of them.
/// - Without either, a request that a browser may have sent (one authorized by the
///   session cookie, or the session exchange) must name the node in `Host`; a bearer
///   token request needs nothing more (no page can attach the token).
/// - A browser request must not carry a body type that a page may send to another
///   origin without asking first (`text/plain`, `application/x-www-form-urlencoded`,
///   `multipart/form-data`).
struct RequestOrigin: Sendable {
    let endpoint: HTTPEndpoint
    /// Whether the node listens on every interface (`0.0.0.0`, `::`): any host name
    /// with the node's port is then its own.
    let wildcard: Bool

    /// The bound port, or nil before the server listens.
    var port: Int? {
        guard let address = endpoint.address, let colon = address.lastIndex(of: ":") else { return nil }
        return Int(address[address.index(after: colon)...])
    }

    /// The `host:port` forms that name this node.
    func authorities(host requestHost: String?) -> [String] {
        guard let address = endpoint.address, let port else { return [] }
        var own = [address.lowercased()]
        if address.hasPrefix("127.") || address.hasPrefix("[::1]") {
            own += ["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)"]
        }
        if wildcard, let requestHost, requestHost.hasSuffix(":\(port)") { own.append(requestHost.lowercased()) }
        return own
    }

    /// Throws a 403 `forbiddenOrigin` (or a 415 for a form body) when the request is
    /// not from the node's own origin.
    func check(_ request: Request, fromBrowser: Bool) throws {
        let host = request.head.authority ?? HTTPField.Name("Host").flatMap { request.headers[$0] }
        let own = authorities(host: host)
        if let origin = request.headers[.origin] {
            guard own.contains(where: { "http://\($0)" == origin.lowercased() }) else {
                throw Self.refusal("Origin \(origin.prefix(100))")
            }
        } else if let referer = request.headers[.referer] {
            let lowered = referer.lowercased()
            guard own.contains(where: { lowered == "http://\($0)" || lowered.hasPrefix("http://\($0)/") }) else {
                throw Self.refusal("Referer \(referer.prefix(100))")
            }
        } else if fromBrowser {
            guard let host, own.contains(host.lowercased()) else {
                throw Self.refusal("Host \(host?.prefix(100) ?? "(none)")")
            }
        }
        if fromBrowser, let type = request.headers[.contentType] {
            let essence =
                type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            if ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"].contains(essence) {
                throw APIError(
                    .unsupportedMediaType,
                    code: "unsupportedMediaType",
                    "a dashboard request may not carry \(essence); send application/json (or application/octet-stream for a raw payload)"
                )
            }
        }
    }

    static func refusal(_ what: String) -> APIError {
        APIError(
            .forbidden,
            code: "forbiddenOrigin",
            "this request changes the node's state but comes from \(what), not from the node's own address; use the dashboard or the API token"
        )
    }
}
