import Foundation
import Logging
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

/// A node running in this process with its HTTP API on a free loopback port (or, with
/// `http: false`, none at all, as `http.enabled: false` makes `scmesh run`), on an
/// in-memory network of its own (`network`).
struct HTTPNode {
    let node: Node
    let directory: TemporaryDirectory
    let task: Task<Void, any Error>
    /// Where the HTTP API listens; empty when the node serves none.
    let address: String
    /// The API token; empty when the node serves no HTTP API.
    let token: String

    var client: NodeHTTPClient { NodeHTTPClient(address: address, token: token) }
    var control: ControlClient { ControlClient(dataDirectory: directory.path) }

    /// Starts a node; on `directory` (a restart) when given, else on a new one.
    static func start(
        network: String,
        overrides: [String] = [],
        eventCapacity: Int = 4096,
        directory: TemporaryDirectory? = nil,
        http: Bool = true,
        idleTimeout: Duration = .seconds(60)
    ) async throws -> HTTPNode {
        let directory = try directory ?? TemporaryDirectory()
        let yaml = """
            relay: {enabled: true}
            http: {enabled: \(http), listen: "127.0.0.1:0"}
            keepalive_interval_ms: 1000
            transports:
              loopback: {enabled: true, priority: 0, network: \(network)}
            """
        let config = try NodeConfiguration.load(
            yaml: yaml,
            source: "test",
            environment: [:],
            overrides: overrides,
            registry: .builtIn
        )
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        let node = try buildNode(
            config: config,
            dataDirectory: directory.path,
            logger: logger,
            registry: .builtIn,
            eventCapacity: eventCapacity
        )
        let control = ControlClient(dataDirectory: directory.path)
        guard http else {
            let task = Task { try await node.run(handlingSignals: false, extraServices: []) }
            try await eventually("the node answers") { try await control.call(.status).ok }
            return HTTPNode(node: node, directory: directory, task: task, address: "", token: "")
        }
        let server = try await NodeHTTPServer(
            node: node,
            logger: logger,
            idleTimeout: idleTimeout
        )
        let task = Task { try await node.run(handlingSignals: false, extraServices: [server]) }
        var address: String?
        try await eventually("the HTTP API listens") {
            address = try await control.call(.status).decode(StatusReply.self).httpAddress
            return address != nil
        }
        return HTTPNode(
            node: node,
            directory: directory,
            task: task,
            address: address!,
            token: try APIToken.load(dataDirectory: directory.path)
        )
    }

    /// Stops the node and removes its data directory unless `keepingDirectory`.
    func stop(keepingDirectory: Bool = false) async throws {
        task.cancel()
        try? await task.value
        if !keepingDirectory { directory.cleanUp() }
    }

    /// Runs `body` with two nodes on a network of their own (`a` with `overrides` and
    /// `eventCapacity`) once `a` has a link to `b`, then stops both, whether `body`
    /// returned or threw.
    static func withPair(
        overrides: [String] = [],
        eventCapacity: Int = 4096,
        _ body: (HTTPNode, HTTPNode) async throws -> Void
    ) async throws {
        let network = uniqueNetwork()
        let a = try await start(network: network, overrides: overrides, eventCapacity: eventCapacity)
        let b: HTTPNode
        do {
            b = try await start(network: network)
        } catch {
            try await a.stop()
            throw error
        }
        do {
            try await eventually("a has a link to b") {
                try await a.control.call(.peers).decode(PeersReply.self).peers.contains { $0.peer == b.node.peerID }
            }
            try await body(a, b)
        } catch {
            try await a.stop()
            try await b.stop()
            throw error
        }
        try await a.stop()
        try await b.stop()
    }

    /// A request with the node's token; `token: nil` sends none.
    func call(
        _ method: HTTPMethod,
        _ target: String,
        json: String? = nil,
        body: [UInt8]? = nil,
        contentType: String? = nil,
        token: String?? = .none,
        headers: [(String, String)] = []
    ) async throws -> NodeHTTPClient.Reply {
        let client = NodeHTTPClient(address: address, token: (token ?? self.token) ?? "")
        let buffer = json.map { ByteBuffer(string: $0) } ?? body.map { ByteBuffer(bytes: $0) }
        return try await client.request(
            method,
            target,
            contentType: json != nil ? "application/json" : contentType,
            body: buffer,
            headers: headers,
            authorize: !(token == .some(.none))
        )
    }
}

extension NodeHTTPClient.Reply {
    /// The body as a JSON object.
    var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The error code of an error reply (`{"ok":false,"code",…}`).
    var errorCode: String? { object["ok"] as? Bool == false ? object["code"] as? String : nil }

    /// The message of an error reply.
    var errorMessage: String? { object["ok"] as? Bool == false ? object["message"] as? String : nil }
}

/// A network name no other test uses.
func uniqueNetwork() -> String { "http-\(UInt64.random(in: 0...UInt64.max))" }

/// A valid Ed25519 public key that no node of these tests has (RFC 8032, test 1): a
/// destination `send` accepts and queues, waiting for a route that never comes.
let strangerPeerHex = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
