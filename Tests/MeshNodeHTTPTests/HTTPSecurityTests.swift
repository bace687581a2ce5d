import Foundation
import MeshCore
import MeshNode
import MeshTesting
import NIOHTTP1
import Synchronization
import Testing

@testable import MeshNodeHTTP

/// Requests a page on another port of the same host could make with the dashboard's
/// cookie (curl-style: every header set by hand), the session lifetimes, and
/// connections that never send a request.
@Suite("HTTP security")
struct HTTPSecurityTests {
    /// Logs in as the dashboard does; returns the `name=value` of the session cookie.
    static func session(_ node: HTTPNode) async throws -> String {
        let login = try await node.call(.POST, "/api/v1/session/login")
        let token = try #require(login.object["token"] as? String)
        let exchange = try await node.call(
            .POST,
            "/api/v1/session",
            json: #"{"token":"\#(token)"}"#,
            token: .some(nil),
            headers: [("Origin", "http://\(node.address)")]
        )
        #expect(exchange.status == 204, "\(exchange.text)")
        let cookie = try #require(exchange.header("Set-Cookie"))
        return String(cookie.prefix { $0 != ";" })
    }

    @Test(
        "a cookie request from another local port is refused: a text/plain send, a contact added, JSON from a foreign Origin, Referer or Host"
    )
    func crossPortRequestsRefused() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let cookie = try await Self.session(a)
        let port = try #require(a.address.split(separator: ":").last)
        #expect(cookie.hasPrefix("scmesh_session_\(port)="), "\(cookie)")
        let evil = "http://127.0.0.1:1"
        let peer = strangerPeerHex
        // What a form or a no-cors fetch on 127.0.0.1:1 can send.
        let message = try await a.call(
            .POST,
            "/api/v1/messages?to=\(peer)",
            body: Array("hi".utf8),
            contentType: "text/plain",
            token: .some(nil),
            headers: [("Cookie", cookie), ("Origin", evil)]
        )
        #expect(message.status == 403 && message.errorCode == "forbiddenOrigin", "\(message.status) \(message.text)")
        let contact = try await a.call(
            .POST,
            "/api/v1/contacts",
            body: Array(#"{"alias":"mallory","peer":"\#(peer)"}"#.utf8),
            contentType: "text/plain",
            token: .some(nil),
            headers: [("Cookie", cookie), ("Origin", evil)]
        )
        #expect(contact.status == 403, "\(contact.status) \(contact.text)")
        let referred = try await a.call(
            .POST,
            "/api/v1/contacts",
            json: #"{"alias":"mallory","peer":"\#(peer)"}"#,
            token: .some(nil),
            headers: [("Cookie", cookie), ("Referer", evil + "/page.html")]
        )
        #expect(referred.status == 403, "\(referred.status) \(referred.text)")
        // Same origin but a form body: refused too.
        let form = try await a.call(
            .POST,
            "/api/v1/messages?to=\(peer)",
            body: Array("hi".utf8),
            contentType: "text/plain",
            token: .some(nil),
            headers: [("Cookie", cookie), ("Origin", "http://\(a.address)")]
        )
        #expect(form.status == 415, "\(form.status) \(form.text)")
        // Even a bearer request from a foreign page is refused.
        let bearer = try await a.call(
            .POST,
            "/api/v1/contacts",
            json: #"{"alias":"mallory","peer":"\#(peer)"}"#,
            headers: [("Origin", evil)]
        )
        #expect(bearer.status == 403, "\(bearer.status) \(bearer.text)")
        let contacts = try await a.call(.GET, "/api/v1/contacts")
        #expect(!contacts.text.contains("mallory"), "\(contacts.text)")
        // From the node's own page the same request works.
        let own = try await a.call(
            .POST,
            "/api/v1/contacts",
            json: #"{"alias":"carol","peer":"\#(peer)"}"#,
            token: .some(nil),
            headers: [("Cookie", cookie), ("Origin", "http://\(a.address)")]
        )
        #expect(own.status == 200, "\(own.status) \(own.text)")
        // Reading needs no Origin; the cookie of another port's node does nothing here.
        let status = try await a.call(.GET, "/api/v1/status", token: .some(nil), headers: [("Cookie", cookie)])
        #expect(status.status == 200)
        let otherName = try await a.call(
            .GET,
            "/api/v1/status",
            token: .some(nil),
            headers: [("Cookie", "scmesh_session_1=" + cookie.split(separator: "=")[1])]
        )
        #expect(otherName.status == 401)
    }

    @Test(
        "an invitation named with the first 8 hex digits of a contact's ID does not take them over: `send <8 digits>` still goes to the contact"
    )
    func invitationNameCannotSpoofAPeerPrefix() async throws {
        let network = uniqueNetwork()
        let c = try await HTTPNode.start(network: network)
        let prefix = String(c.node.peerID.hex.prefix(8))
        let mallory = try await HTTPNode.start(network: network, overrides: ["node.name=\(prefix)"])
        let a = try await HTTPNode.start(network: network)
        defer {
            Task {
                try await a.stop()
                try await c.stop()
                try await mallory.stop()
            }
        }
        #expect(
            try await a.call(.POST, "/api/v1/contacts", json: #"{"alias":"carol","peer":"\#(c.node.peerID.hex)"}"#)
                .status == 200
        )
        let link = try #require(try await mallory.call(.GET, "/api/v1/invitation").object["link"] as? String)
        let join = try await a.call(.POST, "/api/v1/join", json: #"{"invitation":"\#(link)"}"#)
        #expect(join.status == 200, "\(join.text)")
        #expect(join.object["alias"] as? String != prefix, "\(join.text)")
        let send = try await a.call(.POST, "/api/v1/messages", json: #"{"peer":"\#(prefix)","text":"for carol"}"#)
        #expect(send.object["peer"] as? String == c.node.peerID.hex, "\(send.text)")
        // Nor can a contact be added under such a name, or one with bidi or control characters.
        for alias in [prefix, "ABCDEF12", "ev\u{202E}il", "a\u{1B}[31mb", "zero\u{200B}width"] {
            let escaped = String(
                data: try JSONSerialization.data(withJSONObject: [alias], options: [.fragmentsAllowed]),
                encoding: .utf8
            )!.dropFirst().dropLast()
            let added = try await a.call(
                .POST,
                "/api/v1/contacts",
                json: #"{"alias":\#(escaped),"peer":"\#(mallory.node.peerID.hex)"}"#
            )
            #expect(added.status == 400, "alias \(alias.debugDescription): \(added.status) \(added.text)")
        }
    }

    @Test("routes that take JSON refuse any other content type with a 415, even with the token")
    func jsonRoutesNeedJSON() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        for type in ["text/plain", "application/x-www-form-urlencoded", nil] {
            let reply = try await a.call(
                .POST,
                "/api/v1/contacts",
                body: Array(#"{"alias":"carol","peer":"\#(String(repeating: "cd", count: 32))"}"#.utf8),
                contentType: type
            )
            #expect(
                reply.status == 415 && reply.errorCode == "unsupportedMediaType",
                "\(type ?? "none"): \(reply.status) \(reply.text)"
            )
        }
    }

    @Test(
        "a dashboard session ends after its idle lifetime without requests, and after its absolute lifetime however busy"
    )
    func sessionsExpire() throws {
        let clock = Mutex(ContinuousClock.now)
        let sessions = DashboardSessions(
            idleLifetime: .seconds(60),
            absoluteLifetime: .seconds(300),
            now: { clock.withLock { $0 } }
        )
        let advance = { (seconds: Int) in clock.withLock { $0 += .seconds(seconds) } }
        let idle = try #require(sessions.exchange(sessions.makeLogin()))
        let busy = try #require(sessions.exchange(sessions.makeLogin()))
        advance(59)
        #expect(sessions.isValid(busy[...]))
        advance(2)
        #expect(!sessions.isValid(idle[...]), "61 s without a request")
        for _ in 0..<4 {
            #expect(sessions.isValid(busy[...]))
            advance(59)
        }
        #expect(sessions.isValid(busy[...]), "297 s old, used 59 s ago")
        advance(4)
        #expect(!sessions.isValid(busy[...]), "used 4 s ago but 301 s old")
    }

    @Test("a connection that sends no request, or half a request head, is closed after the idle timeout")
    func idleConnectionsClosed() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork(), idleTimeout: .milliseconds(300))
        defer { Task { try await a.stop() } }
        let port = try #require(Int(a.address.split(separator: ":").last ?? ""))
        for sent in ["", "GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "] {
            let closed = try await onOwnThread {
                try Self.closedByServer(port: port, sending: sent, waitingSeconds: 20)
            }
            #expect(closed, "the node kept a connection that sent \(sent.isEmpty ? "nothing" : "half a head") for 20 s")
        }
    }

    /// Connects, sends `text`, and reads until the server closes (true) or
    /// `waitingSeconds` pass (false).
    static func closedByServer(port: Int, sending text: String, waitingSeconds: Int) throws -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw MeshError(.invalidArgument, "socket failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw MeshError(.invalidArgument, "connect to 127.0.0.1:\(port) failed") }
        var timeout = timeval(tv_sec: waitingSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(text.utf8)
        if !bytes.isEmpty {
            _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if received > 0 { continue }
            if received == 0 { return true }
            return errno == ECONNRESET
        }
    }
}
