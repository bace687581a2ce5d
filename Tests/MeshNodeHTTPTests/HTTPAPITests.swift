import Foundation
import MeshCore
import MeshNode
import MeshNodeHTTP
import MeshTesting
import NIOHTTP1
import TestSupport
import Testing
import TransportMDNS

@Suite("HTTP API")
struct HTTPAPITests {
    /// Every route of the API, as (method, path).
    static let routes: [(HTTPMethod, String)] = [
        (.GET, "/api/v1/status"), (.GET, "/api/v1/peers"), (.GET, "/api/v1/transports"), (.GET, "/api/v1/routes"),
        (.POST, "/api/v1/messages"), (.GET, "/api/v1/messages"),
        (.GET, "/api/v1/messages/00000000000000000000000000000000"),
        (.GET, "/api/v1/outbox"), (.GET, "/api/v1/inbox"), (.GET, "/api/v1/inbox/1/payload"),
        (.GET, "/api/v1/contacts"),
        (.POST, "/api/v1/contacts"), (.DELETE, "/api/v1/contacts/bob"), (.PUT, "/api/v1/contacts/bob/blocked"),
        (.DELETE, "/api/v1/contacts/bob/blocked"), (.PUT, "/api/v1/contacts-allow-only"), (.GET, "/api/v1/settings"),
        (.PATCH, "/api/v1/settings"), (.GET, "/api/v1/events"), (.GET, "/api/v1/openapi.json"),
        (.POST, "/api/v1/session/login"), (.GET, "/metrics"), (.GET, "/api/v1/invitation"), (.POST, "/api/v1/join"),
        (.GET, "/api/v1/topics"), (.POST, "/api/v1/topics/subscribe"), (.POST, "/api/v1/topics/unsubscribe"),
        (.POST, "/api/v1/topics/publish"), (.GET, "/api/v1/no-such-route"),
        (.PUT, "/api/v1/transports/bob/disabled"), (.DELETE, "/api/v1/transports/bob/disabled"),
        (.POST, "/api/v1/dial"), (.GET, "/api/v1/peers/known"), (.DELETE, "/api/v1/settings"),
        (.PUT, "/api/v1/contacts/bob/alias"), (.PUT, "/api/v1/contacts/bob/note"),
        (.GET, "/api/v1/conversations"), (.GET, "/api/v1/conversations/carol"), (.POST, "/api/v1/read"),
        (.PUT, "/api/v1/contacts/bob/muted"), (.DELETE, "/api/v1/contacts/bob/muted"),
        (.GET, "/api/v1/invitations"), (.DELETE, "/api/v1/invitations/00000000000000000000000000000000"),
    ]

    @Test(
        "every route answers 401 in the one error shape without the token or with a wrong one; the token file is mode 0600"
    )
    func unauthorized() async throws {
        let node = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await node.stop() } }
        let attributes = try FileManager.default.attributesOfItem(
            atPath: APIToken.path(dataDirectory: node.directory.path)
        )
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        for (method, path) in Self.routes {
            let wrong = (node.token.hasPrefix("0") ? "1" : "0") + String(node.token.dropFirst())
            let tokens: [String?] = [nil, wrong]
            for token in tokens {
                let reply = try await node.call(method, path, token: .some(token))
                #expect(
                    reply.status == 401,
                    "\(method) \(path) with \(token == nil ? "no token" : "a wrong token"): \(reply.status)"
                )
                #expect(reply.errorCode == "unauthorized", "\(method) \(path): \(reply.text)")
                let message = reply.errorMessage
                #expect(message?.contains("api.token") == true, "\(reply.text)")
            }
        }
        // The dashboard page itself is static and open; it holds no data.
        let page = try await node.call(.GET, "/", token: .some(nil))
        #expect(page.status == 200 && page.text.contains("<title>SCMesh node</title>"))
    }

    @Test(
        "two nodes: send raw and JSON, read status, peers, transports, routes, history, trace, inbox and the raw payload"
    )
    func roundTrips() async throws {
        try await HTTPNode.withPair { a, b in
            try await eventually("a sees b") {
                let peers = try await a.call(.GET, "/api/v1/peers").object["peers"] as? [[String: Any]] ?? []
                return peers.contains { $0["peer"] as? String == b.node.peerID.hex }
            }
            let status = try await a.call(.GET, "/api/v1/status")
            #expect(status.status == 200)
            #expect(status.object["peer"] as? String == a.node.peerID.hex)
            #expect(status.object["http_address"] as? String == a.address)
            #expect(status.object["relay_enabled"] as? Bool == true)
            let transports = try await a.call(.GET, "/api/v1/transports").object["transports"] as? [[String: Any]]
            #expect(transports?.first?["name"] as? String == "loopback")
            #expect(transports?.first?["counters"] is [String: Any])
            let routes = try await a.call(.GET, "/api/v1/routes").object["routes"] as? [[String: Any]]
            #expect(
                routes?.contains { $0["destination"] as? String == b.node.peerID.hex } == true,
                "\(String(describing: routes))"
            )

            // Raw bytes (every byte value) with ?to=, waiting for the receipt.
            let payload = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
            let raw = try await a.call(
                .POST,
                "/api/v1/messages?to=\(b.node.peerID.hex)&wait=true&timeout_seconds=20",
                body: payload,
                contentType: "application/octet-stream"
            )
            #expect(raw.status == 200, "\(raw.text)")
            #expect(raw.object["status"] as? String == "delivered")
            #expect(raw.object["bytes"] as? Int == payload.count)
            let rawID = try #require(raw.object["message_id"] as? String)

            // JSON with the socket's fields.
            let json = try await a.call(
                .POST,
                "/api/v1/messages",
                json: #"{"peer":"\#(b.node.peerID.hex)","text":"hello b","wait":true}"#
            )
            #expect(json.status == 200 && json.object["status"] as? String == "delivered", "\(json.text)")

            let inbox = try await b.call(.GET, "/api/v1/inbox?after=0&limit=10")
            let messages = try #require(inbox.object["messages"] as? [[String: Any]])
            #expect(messages.count == 2)
            let first = try #require(messages.first { $0["message_id"] as? String == rawID })
            let seq = try #require(first["seq"] as? Int)
            let download = try await b.call(.GET, "/api/v1/inbox/\(seq)/payload")
            #expect(
                download.status == 200 && download.body == payload,
                "\(download.status) \(download.body.prefix(300))"
            )
            #expect(download.header("X-From") == a.node.peerID.hex)
            let limited =
                try await b.call(.GET, "/api/v1/inbox?after=\(seq)&limit=1").object["messages"] as? [[String: Any]]
            #expect(limited?.count == 1 && limited?.first?["text"] as? String == "hello b")
            #expect(try await b.call(.GET, "/api/v1/inbox/999/payload").status == 404)

            let history = try await a.call(.GET, "/api/v1/messages?limit=5").object["messages"] as? [[String: Any]]
            #expect(history?.count == 2 && history?.allSatisfy { $0["status"] as? String == "delivered" } == true)
            let trace = try await a.call(.GET, "/api/v1/messages/\(rawID)")
            #expect(
                trace.status == 200 && (trace.object["message"] as? [String: Any])?["status"] as? String == "delivered",
                "\(trace.text)"
            )
            #expect((trace.object["trace"] as? [Any])?.isEmpty == false)
            let unknown = try await a.call(.GET, "/api/v1/messages/0123456789abcdef0123456789abcdef")
            #expect(unknown.status == 404 && unknown.errorCode == "unknownMessage")
            let outbox = try await a.call(.GET, "/api/v1/outbox")
            #expect(outbox.status == 200 && outbox.object["total"] as? Int == 0)
        }
    }

    @Test(
        "discovery mode through the API and the socket: switched at run time, saved, in effect after a restart; refused without mDNS"
    )
    func discoveryModeSetting() async throws {
        let network = uniqueNetwork()
        // The mDNS transport runs whether or not an avahi-daemon answers (wait_for_daemon).
        let mdns = [
            "transports.mdns.enabled=true", "transports.mdns.listen=[127.0.0.1:0]", "transports.mdns.ipv6=false",
            "transports.mdns.discovery_mode=normal",
        ]
        let a = try await HTTPNode.start(network: network, overrides: mdns)
        #expect(try await a.call(.GET, "/api/v1/settings").object["discovery_mode"] as? String == "normal")
        let hidden = try await a.call(.PATCH, "/api/v1/settings", json: #"{"discovery_mode":"paranoid"}"#)
        #expect(hidden.status == 200 && hidden.object["discovery_mode"] as? String == "paranoid", "\(hidden.text)")
        let transport = try #require(a.node.transports.compactMap { $0.transport as? MDNSTransport }.first)
        #expect(transport.discoveryMode == .paranoid)
        #expect(try SavedDiscoveryMode.load(dataDirectory: a.directory.path) == .paranoid)
        let socket = try await a.control.call(.settings(SettingsRequest())).decode(SettingsReply.self)
        #expect(socket.discoveryMode == "paranoid")

        let bad = try await a.call(.PATCH, "/api/v1/settings", json: #"{"discovery_mode":"hidden"}"#)
        #expect(
            bad.status == 400 && bad.text.contains("discovery_mode") && bad.text.contains("paranoid"),
            "\(bad.text)"
        )
        let notString = try await a.call(.PATCH, "/api/v1/settings", json: #"{"discovery_mode":1}"#)
        #expect(notString.status == 400 && notString.text.contains("discovery_mode"), "\(notString.text)")
        // A refused change changes nothing, the relay switch in the same request included.
        let mixed = try await a.call(
            .PATCH,
            "/api/v1/settings",
            json: #"{"relay_enabled":false,"discovery_mode":"off"}"#
        )
        #expect(mixed.status == 400)
        let unchanged = try await a.control.call(.settings(SettingsRequest())).decode(SettingsReply.self)
        #expect(unchanged.discoveryMode == "paranoid" && unchanged.relayEnabled)

        // Restarted on the same data directory with the config still saying normal.
        try await a.stop(keepingDirectory: true)
        let restarted = try await HTTPNode.start(network: network, overrides: mdns, directory: a.directory)
        #expect(try await restarted.call(.GET, "/api/v1/settings").object["discovery_mode"] as? String == "paranoid")
        let restartedTransport = try #require(
            restarted.node.transports.compactMap { $0.transport as? MDNSTransport }.first
        )
        #expect(restartedTransport.discoveryMode == .paranoid)
        let socketAgain = try await restarted.control.call(.settings(SettingsRequest(discoveryMode: "cautious")))
        #expect(try socketAgain.decode(SettingsReply.self).discoveryMode == "cautious")
        #expect(restartedTransport.discoveryMode == .cautious)
        #expect(try SavedDiscoveryMode.load(dataDirectory: restarted.directory.path) == .cautious)
        try await restarted.stop()

        // A node without an mDNS transport says so, and reports no mode.
        let plain = try await HTTPNode.start(network: network)
        defer { Task { try await plain.stop() } }
        #expect(try await plain.call(.GET, "/api/v1/settings").object["discovery_mode"] == nil)
        let none = try await plain.call(.PATCH, "/api/v1/settings", json: #"{"discovery_mode":"cautious"}"#)
        #expect(
            none.status == 400 && none.errorCode == "invalidArgument" && none.text.contains("transports.mdns"),
            "\(none.text)"
        )
        #expect(try SavedDiscoveryMode.load(dataDirectory: plain.directory.path) == nil)
    }

    @Test("a saved discovery mode file holding anything else stops the node with a message naming the file")
    func badSavedDiscoveryMode() throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        try "hidden\n".write(
            toFile: SavedDiscoveryMode.path(dataDirectory: directory.path),
            atomically: true,
            encoding: .utf8
        )
        let error = #expect(throws: MeshError.self) { _ = try SavedDiscoveryMode.load(dataDirectory: directory.path) }
        #expect(error?.message.contains(SavedDiscoveryMode.path(dataDirectory: directory.path)) == true)
        #expect(error?.message.contains("normal, cautious or paranoid") == true)
    }

    @Test("contacts and settings change through the API; bad input is a 400 naming the field or parameter")
    func contactsSettingsAndErrors() async throws {
        let network = uniqueNetwork()
        let a = try await HTTPNode.start(network: network)
        defer { Task { try await a.stop() } }
        let bob = strangerPeerHex
        let added = try await a.call(.POST, "/api/v1/contacts", json: #"{"alias":"bob","peer":"\#(bob)","note":"n"}"#)
        #expect(added.status == 200, "\(added.text)")
        let contacts = try await a.call(.GET, "/api/v1/contacts").object["contacts"] as? [[String: Any]]
        #expect(contacts?.first?["alias"] as? String == "bob")
        #expect(try await a.call(.PUT, "/api/v1/contacts/bob/blocked").status == 200)
        let blocked = try await a.call(.GET, "/api/v1/contacts").object["contacts"] as? [[String: Any]]
        #expect(blocked?.first?["blocked"] as? Bool == true, "\(String(describing: blocked))")
        #expect(try await a.call(.DELETE, "/api/v1/contacts/bob/blocked").status == 200)
        #expect(
            try await a.call(.PUT, "/api/v1/contacts-allow-only", json: #"{"on":true}"#).object["allow_only"] as? Bool
                == true
        )
        #expect(
            try await a.call(.PUT, "/api/v1/contacts-allow-only", json: #"{"on":false}"#).object["allow_only"] as? Bool
                == false
        )
        #expect(try await a.call(.DELETE, "/api/v1/contacts/bob").status == 200)
        #expect((try await a.call(.GET, "/api/v1/contacts").object["contacts"] as? [Any])?.isEmpty == true)
        let again = try await a.call(.DELETE, "/api/v1/contacts/bob")
        #expect(again.status == 400 && again.errorCode == "invalidArgument")

        // The relay switch, at run time; status and the control socket see it.
        let off = try await a.call(.PATCH, "/api/v1/settings", json: #"{"relay_enabled":false}"#)
        #expect(off.status == 200 && off.object["relay_enabled"] as? Bool == false)
        #expect(try await a.call(.GET, "/api/v1/status").object["relay_enabled"] as? Bool == false)
        let socket = try await a.control.call(.settings(SettingsRequest())).decode(SettingsReply.self)
        #expect(socket.relayEnabled == false)
        let refused = try await a.call(.POST, "/api/v1/messages?to=\(bob)", body: [1, 2, 3])
        #expect(refused.status == 409 && refused.errorCode == "relayDisabled", "\(refused.text)")
        #expect(
            try await a.control.call(.settings(SettingsRequest(relayEnabled: true))).decode(SettingsReply.self)
                .relayEnabled
        )
        #expect(try await a.call(.GET, "/api/v1/settings").object["relay_enabled"] as? Bool == true)

        // The relay budgets, at run time: checked as a whole before anything changes.
        let budgets = try await a.call(
            .PATCH,
            "/api/v1/settings",
            json: #"{"relay_max_per_hour":120,"relay_neighbour_share":0.5,"relay_battery_floor_percent":10}"#
        )
        #expect(budgets.status == 200, "\(budgets.text)")
        #expect(
            budgets.object["relay_max_per_hour"] as? Int == 120
                && budgets.object["relay_neighbour_share"] as? Double == 0.5
        )
        #expect(budgets.object["relay_battery_floor_percent"] as? Int == 10)
        let badShare = try await a.call(
            .PATCH,
            "/api/v1/settings",
            json: #"{"relay_max_per_hour":5,"relay_neighbour_share":2}"#
        )
        #expect(badShare.status == 400 && badShare.text.contains("relay_neighbour_share"), "\(badShare.text)")
        let notWhole = try await a.call(.PATCH, "/api/v1/settings", json: #"{"relay_max_per_hour":1.5}"#)
        #expect(notWhole.status == 400 && notWhole.text.contains("relay_max_per_hour"), "\(notWhole.text)")
        let kept = try await a.control.call(.settings(SettingsRequest())).decode(SettingsReply.self)
        #expect(kept.relayMaxPerHour == 120 && kept.relayNeighbourShare == 0.5 && kept.relayBatteryFloorPercent == 10)
        let viaSocket = try await a.control.call(.settings(SettingsRequest(relayMaxPerHour: 0))).decode(
            SettingsReply.self
        )
        #expect(viaSocket.relayMaxPerHour == 0)

        // Bad input names what is wrong.
        let typo = try await a.call(.GET, "/api/v1/inbox?limt=3")
        #expect(typo.status == 400 && typo.text.contains("limt"), "\(typo.text)")
        let field = try await a.call(.PATCH, "/api/v1/settings", json: #"{"relay":true}"#)
        #expect(field.status == 400 && field.text.contains(#"unknown field \"relay\""#), "\(field.text)")
        let sendField = try await a.call(.POST, "/api/v1/messages", json: #"{"peer":"\#(bob)","text":"x","limt":1}"#)
        #expect(sendField.status == 400 && sendField.text.contains("limt"), "\(sendField.text)")
        let notJSON = try await a.call(.POST, "/api/v1/contacts", json: "{nope")
        #expect(notJSON.status == 400 && notJSON.errorCode == "badRequest")
        let noTo = try await a.call(.POST, "/api/v1/messages", body: [1])
        #expect(noTo.status == 400 && noTo.text.contains("?to="))
        let route = try await a.call(.GET, "/api/v1/nothing")
        #expect(route.status == 404 && route.errorCode == "notFound")
        let badPeer = try await a.call(.POST, "/api/v1/messages?to=nobody", body: [1])
        #expect(badPeer.status == 400 && badPeer.errorCode == "invalidArgument")
    }

    @Test("the control socket rejects an unknown request field by name (\"limt\")")
    func socketUnknownField() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let reply = try ControlReply(line: await a.control.exchange(Array(#"{"cmd":"inbox","limt":3}"#.utf8)))
        #expect(!reply.ok)
        #expect(reply.error?.contains("\"limt\"") == true, "\(reply.line)")
    }

    @Test("a dashboard login token is exchanged once for a session cookie that authorizes the API")
    func dashboardLogin() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let login = try await a.call(.POST, "/api/v1/session/login")
        let token = try #require(login.object["token"] as? String)
        let exchange = try await a.call(.POST, "/api/v1/session", json: #"{"token":"\#(token)"}"#, token: .some(nil))
        #expect(exchange.status == 204)
        let cookie = try #require(exchange.header("Set-Cookie"))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let session = String(cookie.prefix { $0 != ";" })
        let status = try await a.call(.GET, "/api/v1/status", token: .some(nil), headers: [("Cookie", session)])
        #expect(status.status == 200)
        let reused = try await a.call(.POST, "/api/v1/session", json: #"{"token":"\#(token)"}"#, token: .some(nil))
        #expect(reused.status == 401)
        let forged = try await a.call(
            .GET,
            "/api/v1/status",
            token: .some(nil),
            headers: [("Cookie", "scmesh_session=\(token)")]
        )
        #expect(forged.status == 401)
    }

    @Test(
        "an invitation over HTTP carries its link as a QR code in SVG; joining with it through the other node's API adds the contact; bad ones are a 400"
    )
    func invitationAndJoin() async throws {
        try await HTTPNode.withPair(overrides: ["node.name=http-inviter"]) { a, b in
            let reply = try await a.call(.GET, "/api/v1/invitation?expires_seconds=3600")
            #expect(reply.status == 200, "\(reply.text)")
            let link = try #require(reply.object["link"] as? String)
            #expect(link.hasPrefix("scmesh:"))
            #expect(reply.object["peer"] as? String == a.node.peerID.hex)
            #expect(reply.object["name"] as? String == "http-inviter")
            // The SVG draws the same modules as the encoder's own symbol for the link.
            let svg = try #require(reply.object["qr_svg"] as? String)
            let code = try QRCode.encode(Array(link.utf8), errorCorrection: .low)
            #expect(svg == code.svg(title: "invitation to http-inviter"))
            #expect(
                svg.hasPrefix(
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(code.size + 8) \(code.size + 8)\""
                )
            )
            #expect(try await a.call(.GET, "/api/v1/invitation?expires_seconds=5").status == 400)

            let join = try await b.call(.POST, "/api/v1/join", json: #"{"invitation":"\#(link)","alias":"inviter"}"#)
            #expect(join.status == 200, "\(join.text)")
            #expect(join.object["peer"] as? String == a.node.peerID.hex)
            #expect(join.object["alias"] as? String == "inviter")
            #expect(join.object["contact_added"] as? Bool == true)
            let contacts = try await b.call(.GET, "/api/v1/contacts")
            #expect(contacts.text.contains(a.node.peerID.hex))
            let forged = try await b.call(.POST, "/api/v1/join", json: #"{"invitation":"scmesh:AAAA"}"#)
            #expect(forged.status == 400 && forged.errorCode == "invitationMalformed", "\(forged.text)")
            #expect(try await b.call(.POST, "/api/v1/join", json: #"{"invitation":"\#(link)","x":1}"#).status == 400)
        }
    }

    @Test("the OpenAPI document is served and lists every route")
    func openAPI() async throws {
        let a = try await HTTPNode.start(network: uniqueNetwork())
        defer { Task { try await a.stop() } }
        let reply = try await a.call(.GET, "/api/v1/openapi.json")
        #expect(reply.status == 200)
        let paths = try #require(reply.object["paths"] as? [String: [String: Any]])
        for (method, path) in Self.routes where !path.contains("no-such") {
            let templated = path.replacingOccurrences(of: "00000000000000000000000000000000", with: "{id}")
                .replacingOccurrences(of: "/inbox/1/", with: "/inbox/{seq}/")
                .replacingOccurrences(of: "/conversations/carol", with: "/conversations/{peer}").replacingOccurrences(
                    of: "/bob",
                    with: "/{name}"
                )
            let key = templated
            #expect(paths[key]?[method.rawValue.lowercased()] != nil, "\(method) \(key) missing from openapi.json")
        }
    }
}
