import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MeshCore
import MeshNode
import NIOCore
import ServiceLifecycle

/// The node's local HTTP API (`http.enabled`, `http.listen`): the routes under
/// `/api/v1/` (listed in `/api/v1/openapi.json`), the event stream, the
/// dashboard at `/` and `/metrics`. Every route needs the bearer token in
/// `DATA-DIR/api.token` (created at the first start, mode 0600).
///
/// Run it as one more service of the node:
///
/// ```swift
/// let http = try await NodeHTTPServer(node: node, logger: logger)
/// try await node.run(extraServices: [http])
/// ```
///
/// A listen address that cannot be bound (in use) does not stop the node: the
/// server logs the problem, `scmesh status` shows it, and the rest of the node runs.
public final class NodeHTTPServer: Service, Sendable {
    let node: Node
    let token: String
    var events: EventLog { node.events }
    let sessions: DashboardSessions
    let metrics = MetricsExporter()
    let logger: Logger
    /// The most one read of a connection takes (``LargeReadChannel``). It also bounds
    /// what a connection that sends faster than its handler reads holds in buffered
    /// reads before backpressure stops reading it (as many as the channel's and the
    /// request body's backpressure watermarks let through). 1 MiB: fewer, larger reads
    /// make a large upload faster than 256 KiB does.
    static let maximumRead = 1 << 20
    /// How long a connection may stay without a complete request head or a body part
    /// (and, between requests, idle) before it is closed: a client that connects and
    /// sends nothing, or a header a byte at a time, holds no connection for long. A
    /// response being written (an event stream) is never cut.
    let idleTimeout: Duration

    /// Reads or creates the token. The event stream serves the node's event log
    /// (``buildNode(config:dataDirectory:logger:registry:identity:eventCapacity:)``
    /// sets how many it holds).
    /// - Parameters:
    ///   - idleTimeout: how long a connection may wait without a request (or between
    ///     the parts of one) before it is closed.
    /// - Throws: `.invalidConfiguration` when the token file cannot be written.
    public convenience init(
        node: Node,
        logger: Logger,
        idleTimeout: Duration = .seconds(60)
    ) async throws {
        try await self.init(
            node: node,
            logger: logger,
            idleTimeout: idleTimeout,
            sessions: DashboardSessions()
        )
    }

    init(
        node: Node,
        logger: Logger,
        idleTimeout: Duration,
        sessions: DashboardSessions
    ) async throws {
        self.node = node
        self.sessions = sessions
        self.idleTimeout = idleTimeout
        self.token = try APIToken.loadOrCreate(dataDirectory: node.dataDirectory)
        var logger = logger
        logger[metadataKey: "component"] = "http"
        self.logger = logger
    }

    var commands: ControlHandler { node.commands }

    /// The rule for where state-changing requests may come from.
    var origin: RequestOrigin {
        let host = node.configuration.http.hostAndPort.host
        return RequestOrigin(endpoint: node.httpEndpoint, wildcard: ["0.0.0.0", "::", "[::]", ""].contains(host))
    }

    /// Serves until graceful shutdown. A bind failure is logged and reported in
    /// `status` (`http_problem`); the method then waits for shutdown.
    public func run() async throws {
        let settings = node.configuration.http
        let (host, port) = settings.hostAndPort
        if !settings.isLoopback {
            logger.warning(
                "http.listen \(settings.listen) is beyond loopback: the HTTP API (token required) is reachable from the network"
            )
        }
        let router = Hummingbird.Router(context: BasicRequestContext.self)
        router.add(middleware: APIErrorMiddleware(routes: Self.routePatterns()))
        router.add(middleware: AuthMiddleware(token: token, sessions: sessions, origin: origin))
        addRoutes(to: router)
        let endpoint = node.httpEndpoint
        let logger = self.logger
        let dataDirectory = node.dataDirectory
        APIAddress.remove(dataDirectory: dataDirectory)
        defer { APIAddress.remove(dataDirectory: dataDirectory) }
        // The configured port first; when another process holds it (a second node on
        // this machine), a free port, said in the log and in `scmesh status`.
        func application(port: Int, note: String?) -> some ApplicationProtocol {
            Application(
                router: router,
                // A 10 MiB upload arrived in 160-350 reads of at most 64 KiB (NIO's default),
                // each a hop from the event loop to the handler and a write of its own.
                server: .http1(maximumRead: Self.maximumRead, idleTimeout: idleTimeout),
                configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
                onServerRunning: { channel in
                    let bound = Self.describe(channel.localAddress) ?? settings.listen
                    endpoint.listening(on: bound, note: note)
                    APIAddress.write(bound, dataDirectory: dataDirectory)
                    if let note {
                        logger.warning(
                            "http api listening on http://\(bound)/: \(note)",
                            metadata: ["http_address": "\(bound)"]
                        )
                    } else {
                        logger.info("http api listening on http://\(bound)/", metadata: ["http_address": "\(bound)"])
                    }
                },
                logger: logger
            )
        }
        let app = application(port: port, note: nil)
        let fallback = application(
            port: 0,
            note: "\(settings.listen) (http.listen) is in use, by another node perhaps, so the node chose a free port"
        )
        let events = self.events
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // Keep-alive ticks for the event streams.
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(15))
                    events.wakeAll()
                }
            }
            group.addTask {
                do {
                    try await withGracefulShutdownHandler {
                        do {
                            try await app.run()
                        } catch let error as IOError where error.errnoCode == EADDRINUSE && port != 0 {
                            try await fallback.run()
                        }
                    } onGracefulShutdown: {
                        events.finish()
                    }
                } catch {
                    let problem = "cannot serve HTTP on \(settings.listen) (http.listen): \(Self.describeError(error))"
                    logger.error("\(problem); the node runs without its HTTP API")
                    endpoint.stopped(problem: problem)
                    try? await gracefulShutdown()
                    events.finish()
                    return
                }
                endpoint.stopped(problem: nil)
            }
            try await group.next()
            group.cancelAll()
        }
    }

    /// The routes of `openapi.json` (the test suite checks that it lists every route),
    /// as path patterns with their methods.
    static func routePatterns() -> [(pattern: [Substring], methods: [String])] {
        guard let data = embeddedResource("openapi.json"),
            let document = try? JSONSerialization.jsonObject(with: Data(data)) as? [String: Any],
            let paths = document["paths"] as? [String: [String: Any]]
        else { return [] }
        return paths.map { path, operations in
            (pattern: path.split(separator: "/"), methods: operations.keys.filter { $0 != "parameters" }.sorted())
        } + [(pattern: [], methods: ["get"])]
    }

    /// `127.0.0.1:7480`, `[::1]:7480`.
    static func describe(_ address: SocketAddress?) -> String? {
        guard let address, let ip = address.ipAddress, let port = address.port else { return nil }
        if case .v6 = address { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }

    static func describeError(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        return String(describing: error).prefix(200).description
    }
}
