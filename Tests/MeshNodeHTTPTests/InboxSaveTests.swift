import Foundation
import MeshCore
import MeshNode
import MeshStore
import MeshTesting
import NIOCore
import NIOHTTP1
import NIOPosix
import TestSupport
import Testing

@testable import MeshNodeHTTP

// `scmesh inbox` lists without payloads, and `--save` (InboxSaver) downloads each payload
// raw from the HTTP API into a temporary file renamed into place, or, when the node
// serves no HTTP API, takes it from the control socket as base64. Real nodes, the
// receiver's HTTP API on 127.0.0.1 port 0.

@Suite("inbox listings without payloads, and --save")
struct InboxSaveTests {
    /// Bytes no encoder invents, `count` of them: every byte value, not text.
    static func binary(_ count: Int, seed: Int = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: (($0 &+ seed) &* 2_654_435_761) >> 7) }
    }

    /// Starts `a` (HTTP API on) and `b` (HTTP API on unless `receiverHTTP` is false) on
    /// one in-memory network, linked.
    static func pair(receiverHTTP: Bool = true) async throws -> (HTTPNode, HTTPNode) {
        let network = uniqueNetwork()
        let a = try await HTTPNode.start(network: network)
        let b = try await HTTPNode.start(network: network, http: receiverHTTP)
        try await eventually("a has a link to b") {
            try await a.control.call(.peers).decode(PeersReply.self).peers.contains { $0.peer == b.node.peerID }
        }
        return (a, b)
    }

    /// Sends `payload` raw from `a` to `b` and waits for the receipt; returns its ID.
    static func send(_ payload: [UInt8], from a: HTTPNode, to b: HTTPNode) async throws -> MessageID {
        let reply = try await a.client.send(
            SendRequest(peer: b.node.peerID.hex, wait: true, timeoutSeconds: 30),
            payload: ByteBuffer(bytes: payload)
        )
        let sent = try reply.decode(SendReply.self)
        #expect(sent.status == .delivered, "\(reply.line)")
        return sent.messageID
    }

    /// The files in `directory`, sorted (hidden ones too: a temporary file left behind
    /// would show).
    static func files(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    static func mode(_ path: String) throws -> Int? {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
    }

    @Test(
        "payloads:false lists sizes, short texts and the first bytes, never payload_base64, over the socket and HTTP; the default still carries the payloads; the text report of either listing agrees on short messages"
    )
    func listingWithoutPayloads() async throws {
        let (a, b) = try await Self.pair()
        defer {
            Task {
                try await a.stop()
                try await b.stop()
            }
        }
        let large = Self.binary((1 << 20) + 3)  // above the inbox file threshold (64 KiB)
        let longText = Array((0..<4_000).map { "line \($0) of a long text\n" }.joined().utf8)
        let shortBinary: [UInt8] = [0, 1, 2, 0xFF, 0xFE, 10, 13, 0x1B]
        _ = try await Self.send(Array("hello bob".utf8), from: a, to: b)
        _ = try await Self.send(large, from: a, to: b)
        _ = try await Self.send(longText, from: a, to: b)
        _ = try await Self.send(shortBinary, from: a, to: b)
        // The large ones are kept in files, not rows.
        #expect(try Self.files(b.directory.path + "/store.sqlite-payloads").count == 2)

        let bare = try await b.control.call(.inbox(InboxRequest(payloads: false)))
        #expect(bare.ok && !bare.line.contains("payload_base64"), "\(bare.line.prefix(300))")
        let listing = try bare.decode(InboxReply.self)
        #expect(listing.messages.map(\.bytes) == [9, large.count, longText.count, shortBinary.count])
        #expect(listing.messages.allSatisfy { $0.payloadBase64 == nil })
        #expect(listing.messages[0].text == "hello bob" && listing.messages[0].headBase64 == nil)
        for (message, payload) in [(listing.messages[1], large), (listing.messages[2], longText)] {
            #expect(message.text == nil)
            #expect(
                message.headBase64.flatMap { Data(base64Encoded: $0) }.map(Array.init)
                    == Array(payload.prefix(InboxReply.headBytes))
            )
        }
        #expect(
            listing.messages[3].text == nil && listing.messages[3].headBase64 == Data(shortBinary).base64EncodedString()
        )
        #expect(bare.line.count < 10_000, "a listing without payloads stays small: \(bare.line.count) bytes")

        // The default (scripts rely on it): payloads included.
        let full = try await b.control.call(.inbox(InboxRequest())).decode(InboxReply.self)
        #expect(full.messages[1].payloadBase64.flatMap { Data(base64Encoded: $0) }.map(Array.init) == large)
        #expect(full.messages[2].text.map { Array($0.utf8) } == longText)
        #expect(full.messages.allSatisfy { $0.headBase64 == nil })

        // The text report: short messages read the same either way; a long text shows
        // its start and how much there is; a large binary the start of its base64.
        for index in [0, 3] {
            #expect(TextReport.inboxMessage(listing.messages[index]) == TextReport.inboxMessage(full.messages[index]))
        }
        #expect(TextReport.inboxMessage(listing.messages[3]).hasSuffix("    (binary, base64) AAEC//4KDRs="))
        let longReport = TextReport.inboxMessage(listing.messages[2])
        #expect(longReport.contains("\n    line 0 of a long text\n    line 1 of a long text\n"), "\(longReport)")
        #expect(
            longReport.hasSuffix(
                "\n    line 9 of a long text…\n    (\(longText.count) bytes in all; --save DIR writes them to a file)"
            ),
            "\(longReport)"
        )
        #expect(longReport.split(separator: "\n").count == 1 + 10 + 1, "\(longReport)")
        #expect(
            TextReport.inboxMessage(listing.messages[1]).hasSuffix(
                "    (binary, base64) \(Data(large.prefix(57)).base64EncodedString())…"
            )
        )

        // HTTP: the same option as a query parameter; the default carries the payloads.
        let overHTTP = try await b.call(.GET, "/api/v1/inbox?after=1&payloads=false")
        #expect(overHTTP.status == 200 && !overHTTP.text.contains("payload_base64"))
        #expect(
            (overHTTP.object["messages"] as? [[String: Any]])?.map { $0["bytes"] as? Int } == [
                large.count, longText.count, shortBinary.count,
            ]
        )
        let withPayloads = try await b.call(.GET, "/api/v1/inbox?after=3")
        #expect(
            (withPayloads.object["messages"] as? [[String: Any]])?.first?["payload_base64"] as? String
                == Data(shortBinary).base64EncodedString()
        )
        #expect(try await b.call(.GET, "/api/v1/inbox?payloads=maybe").status == 400)

        // A wrong type or a typo is refused, as for every field.
        let wrongType = try ControlReply(
            line: await b.control.exchange(Array(#"{"cmd":"inbox","payloads":"no"}"#.utf8))
        )
        #expect(wrongType.error == #"request field "payloads" must be true or false"#)
        let typo = try ControlReply(line: await b.control.exchange(Array(#"{"cmd":"inbox","payload":false}"#.utf8)))
        #expect(typo.error?.hasPrefix(#"unknown request field "payload" (known fields: "#) == true, "\(typo.line)")
        #expect(typo.error?.contains(", payloads,") == true, "\(typo.line)")
    }

    @Test(
        "--save over HTTP: a payload above the inbox file threshold is downloaded byte for byte into a 0600 file (no temporary file left); saving again, and a file that exists, are left alone; a message gone from the inbox is reported, not written"
    )
    func saveOverHTTP() async throws {
        let (a, b) = try await Self.pair()
        defer {
            Task {
                try await a.stop()
                try await b.stop()
            }
        }
        let large = Self.binary((3 << 20) + 1)
        let small = Self.binary(100, seed: 9)
        let largeID = try await Self.send(large, from: a, to: b)
        let smallID = try await Self.send(small, from: a, to: b)
        let listing = try await b.control.call(.inbox(InboxRequest(payloads: false))).decode(InboxReply.self)
        #expect(listing.messages.map(\.id) == [largeID, smallID])

        let directory = b.directory.path + "/saved/inbox"
        let saver = try InboxSaver(directory: directory, dataDirectory: b.directory.path)
        #expect(try Self.mode(directory) == 0o700)
        let saved = try await saver.save(listing.messages)
        #expect(saved.map(\.outcome) == [.written(.http), .written(.http)])
        #expect(saved.map(\.seq) == [1, 2])
        #expect(FileManager.default.contents(atPath: directory + "/" + largeID.hex).map(Array.init) == large)
        #expect(FileManager.default.contents(atPath: directory + "/" + smallID.hex).map(Array.init) == small)
        #expect(try Self.files(directory) == [largeID.hex, smallID.hex].sorted())
        #expect(try Self.mode(directory + "/" + largeID.hex) == 0o600)

        // Again: nothing is written. A file of that name that holds something else is
        // left alone too; a removed one is saved again. A temporary file a killed save
        // left behind (its process gone) is removed by this save.
        let leftover = ".\(largeID.hex).\(try InboxSaverStalePartsTests.impossibleProcess())-0123456789abcdef.part"
        #expect(FileManager.default.createFile(atPath: directory + "/" + leftover, contents: Data(large.prefix(1000))))
        #expect(try await saver.save(listing.messages).map(\.outcome) == [.existed, .existed])
        #expect(try Self.files(directory) == [largeID.hex, smallID.hex].sorted())
        try FileManager.default.removeItem(atPath: directory + "/" + largeID.hex)
        #expect(
            FileManager.default.createFile(atPath: directory + "/" + smallID.hex + ".tmp", contents: Data("mine".utf8))
        )
        try FileManager.default.removeItem(atPath: directory + "/" + smallID.hex)
        try FileManager.default.moveItem(
            atPath: directory + "/" + smallID.hex + ".tmp",
            toPath: directory + "/" + smallID.hex
        )
        #expect(try await saver.save(listing.messages).map(\.outcome) == [.written(.http), .existed])
        #expect(FileManager.default.contents(atPath: directory + "/" + largeID.hex).map(Array.init) == large)
        #expect(FileManager.default.contents(atPath: directory + "/" + smallID.hex) == Data("mine".utf8))

        // Gone between the listing and the download (the HTTP API's 404).
        #expect(try await b.node.inbox.remove(through: 2) == 2)
        let elsewhere = try InboxSaver(directory: b.directory.path + "/elsewhere", dataDirectory: b.directory.path)
        #expect(try await elsewhere.save(listing.messages).map(\.outcome) == [.gone, .gone])
        #expect(try Self.files(elsewhere.directory).isEmpty)
    }

    @Test(
        "--save with the HTTP API off (or its address stale): the payloads come over the control socket as base64, byte for byte"
    )
    func saveOverSocket() async throws {
        let (a, b) = try await Self.pair(receiverHTTP: false)
        defer {
            Task {
                try await a.stop()
                try await b.stop()
            }
        }
        let large = Self.binary(200_000, seed: 3)
        let text = Array("a short one".utf8)
        let largeID = try await Self.send(large, from: a, to: b)
        let textID = try await Self.send(text, from: a, to: b)
        #expect(try await b.control.call(.status).decode(StatusReply.self).httpAddress == nil)
        let listing = try await b.control.call(.inbox(InboxRequest(payloads: false))).decode(InboxReply.self)
        #expect(listing.messages.allSatisfy { $0.payloadBase64 == nil })

        let saver = try InboxSaver(directory: b.directory.path + "/saved", dataDirectory: b.directory.path)
        let saved = try await saver.save(listing.messages)
        #expect(saved.map(\.outcome) == [.written(.controlSocket), .written(.controlSocket)])
        #expect(FileManager.default.contents(atPath: saver.path(of: largeID)).map(Array.init) == large)
        #expect(FileManager.default.contents(atPath: saver.path(of: textID)).map(Array.init) == text)
        #expect(try Self.files(saver.directory) == [largeID.hex, textID.hex].sorted())
        #expect(try await saver.save(listing.messages).map(\.outcome) == [.existed, .existed])

        // An address file left by an earlier node with the API on, where nothing
        // answers now: the socket again.
        let closedPort = try await Self.withServer(reply: { _ in [] }) { address in address }
        try Data((closedPort + "\n").utf8).write(
            to: URL(fileURLWithPath: APIAddress.path(dataDirectory: b.directory.path))
        )
        try Data(String(repeating: "0", count: 64).utf8).write(
            to: URL(fileURLWithPath: APIToken.path(dataDirectory: b.directory.path))
        )
        let stale = try InboxSaver(directory: b.directory.path + "/stale", dataDirectory: b.directory.path)
        #expect(
            try await stale.save(listing.messages).map(\.outcome) == [
                .written(.controlSocket), .written(.controlSocket),
            ]
        )
        #expect(FileManager.default.contents(atPath: stale.path(of: largeID)).map(Array.init) == large)

        // A listing that carries the payloads is written from it.
        let full = try await b.control.call(.inbox(InboxRequest())).decode(InboxReply.self)
        let fromListing = try InboxSaver(directory: b.directory.path + "/from-listing", dataDirectory: b.directory.path)
        #expect(try await fromListing.save(full.messages).map(\.outcome) == [.written(.listing), .written(.listing)])
        #expect(FileManager.default.contents(atPath: fromListing.path(of: largeID)).map(Array.init) == large)
    }

    @Test(
        "a download that breaks off saves nothing under the message's name, leaves no temporary file, and the error says what happened and what to do"
    )
    func brokenDownloadLeavesNoFile() async throws {
        let (a, b) = try await Self.pair(receiverHTTP: false)
        defer {
            Task {
                try await a.stop()
                try await b.stop()
            }
        }
        let payload = Self.binary(300_000, seed: 5)
        let id = try await Self.send(payload, from: a, to: b)
        let listing = try await b.control.call(.inbox(InboxRequest(payloads: false))).decode(InboxReply.self)
        let saver = try InboxSaver(directory: b.directory.path + "/saved", dataDirectory: b.directory.path)
        // An HTTP API that promises the whole payload and sends 100,000 bytes of it.
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-Message-ID: \(id.hex)\r\nContent-Length: \(payload.count)\r\n\r\n"
        try await Self.withServer(reply: { _ in Array(head.utf8) + payload.prefix(100_000) }) { address in
            try Data((address + "\n").utf8).write(
                to: URL(fileURLWithPath: APIAddress.path(dataDirectory: b.directory.path))
            )
            try Data(String(repeating: "0", count: 64).utf8).write(
                to: URL(fileURLWithPath: APIToken.path(dataDirectory: b.directory.path))
            )
            let error = await #expect(throws: MeshError.self) { try await saver.save(listing.messages) }
            let message = error?.message ?? ""
            #expect(message.contains("the download of message #1 (\(id.hex)) failed"), "\(message)")
            #expect(message.contains("broke off after 100000 bytes"), "\(message)")
            #expect(
                message.contains("nothing was saved under \(saver.path(of: id)); run the command again to retry"),
                "\(message)"
            )
        }
        #expect(try Self.files(saver.directory).isEmpty)
    }

    /// Runs `body` with the `host:port` of a TCP server on 127.0.0.1 (port 0) that
    /// answers each connection's first bytes with `reply` of them, then closes it; the
    /// server is closed when `body` returns.
    static func withServer<T: Sendable>(
        reply: @escaping @Sendable ([UInt8]) -> [UInt8],
        _ body: (String) async throws -> T
    ) async throws -> T {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let port = try #require(server.channel.localAddress?.port)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await server.executeThenClose { connections in
                    for try await connection in connections {
                        try? await connection.executeThenClose { inbound, outbound in
                            for try await request in inbound {
                                try await outbound.write(ByteBuffer(bytes: reply(Array(buffer: request))))
                                break
                            }
                        }
                    }
                }
            }
            let result = try await body("127.0.0.1:\(port)")
            group.cancelAll()
            return result
        }
    }
}
