import Foundation
import MeshCore
import MeshNode
import Testing

@Suite struct TextReportTests {
    @Test("every refusal reason the router counts shows on the status line, zeros left out")
    func routerRefusals() {
        var stats = RouterStats()
        #expect(TextReport.routerRefusals(stats).isEmpty)
        stats.unauthenticatedLinksEvicted = 42
        stats.writeStalledLinksClosed = 1
        stats.framesRefused = 7
        stats.handshakeFailuresByReason["badSignature"] = 3
        stats.malformedInputs["malformedFrame"] = 2
        stats.sealedMessagesRejected["openFailed"] = 5
        #expect(
            TextReport.routerRefusals(stats) == [
                "unauthenticated_evicted": 42, "write_stalled_links": 1, "frames_refused": 7,
                "handshake_failed.badSignature": 3, "malformed.malformedFrame": 2, "sealed_rejected.openFailed": 5,
            ]
        )
    }

    @Test(
        "one naming of peers: a contact's alias wins, a stranger's claimed name is marked ~, else the ID; --full whole"
    )
    func peerNaming() throws {
        let peer = try PeerID(bytes: [UInt8](repeating: 0xAB, count: 32))
        #expect(TextReport.named(peer, alias: "bob", name: "mallory", full: false) == "bob (abababab…)")
        #expect(TextReport.named(peer, alias: nil, name: "Alice laptop", full: false) == "~Alice laptop (abababab…)")
        #expect(TextReport.named(peer, alias: nil, name: nil, full: false) == "abababab…")
        #expect(TextReport.named(peer, alias: nil, name: "dave", full: true) == "~dave (\(peer.hex))")
        // What a node did not validate is still escaped on the way to a terminal.
        #expect(TextReport.named(peer, alias: nil, name: "x\u{1B}[2J", full: false) == "~x\\u{1B}[2J (abababab…)")
        // A peers reply as the node sends it: `names` beside `aliases`, by peer ID.
        let line =
            #"{"peers":[{"peer":"\#(peer.hex)","links":[],"wire_version":1,"capabilities":[]}],"names":{"\#(peer.hex)":"Alice laptop"}}"#
        let reply = try ControlJSON.decoder().decode(PeersReply.self, from: Data(line.utf8))
        #expect(reply.names == [peer.hex: "Alice laptop"])
        #expect(TextReport.peers(reply).contains("~Alice laptop (abababab…)"))
    }

    @Test("scmesh routes: nearest first, direct links say so, a hostile transport name is escaped, JSON in snake_case")
    func routes() throws {
        let near = try PeerID(bytes: [UInt8](repeating: 2, count: 32))
        let far = try PeerID(bytes: [UInt8](repeating: 1, count: 32))
        let reply = RoutesReply(routes: [
            RouteSnapshot(
                destination: far,
                nextHop: near,
                hops: 3,
                sequence: 42,
                ageMilliseconds: 1_500,
                transport: "tcp\u{1B}[2J"
            ),
            RouteSnapshot(
                destination: near,
                nextHop: near,
                hops: 1,
                sequence: nil,
                ageMilliseconds: 0,
                transport: "tcp"
            ),
        ])
        let lines = TextReport.routes(reply).split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("DESTINATION") && lines[0].contains("NEXT HOP") && lines[0].contains("SEQUENCE"))
        #expect(lines[1].hasPrefix(near.short + "…") && lines[1].contains("direct") && lines[1].hasSuffix("-"))
        #expect(lines[2].hasPrefix(far.short + "…") && lines[2].contains(near.short + "…"), "\(lines[2])")
        #expect(lines[2].hasSuffix("42") && !lines[2].contains(near.hex), "\(lines[2])")
        #expect(TextReport.routes(reply, full: true).contains(near.hex))
        #expect(lines[2].contains("tcp\\u{1B}[2J") && !lines[2].contains("\u{1B}"), "\(lines[2])")
        #expect(TextReport.routes(RoutesReply(routes: [])) == "no routes (no peer reachable)")

        let json = String(decoding: try ControlJSON.encoder().encode(reply), as: UTF8.self)
        #expect(json.contains(#""next_hop":"\#(near.hex)""#) && json.contains(#""age_milliseconds":1500"#), "\(json)")
        #expect(json.contains(#""sequence":42"#) && json.contains(#""hops":3"#))
    }

    @Test("a clock-based announcement sequence reads as its count and how long ago it began; JSON keeps the number")
    func readableSequence() throws {
        // 2026-11-28T19:32:34Z in milliseconds, shifted as a node's first sequence is, plus one.
        let started: UInt64 = 1_795_894_354_000
        let value = (started << 20) + 1
        let now = Date(timeIntervalSince1970: Double(started) / 1000 + 7_500)
        #expect(TextReport.sequence(value, now: now) == "#1 (2h 5m ago)")
        #expect(TextReport.sequence(42) == "42")
        let peer = try PeerID(bytes: [UInt8](repeating: 2, count: 32))
        let reply = RoutesReply(routes: [
            RouteSnapshot(
                destination: peer,
                nextHop: peer,
                hops: 1,
                sequence: value,
                ageMilliseconds: 0,
                transport: "tcp"
            )
        ])
        let row = try #require(TextReport.routes(reply).split(separator: "\n").last)
        #expect(row.hasSuffix(" ago)") && row.contains("#1 ("), "\(row)")
        #expect(!row.contains("\(value)"))
        #expect(String(decoding: try ControlJSON.encoder().encode(reply), as: UTF8.self).contains("\(value)"))
    }
}
