import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// Issue 43: a payload over max_message_size is refused as soon as it passes the limit,
// never read whole first, and the refusal names the limit and says nothing was queued.
// Real `scmesh` processes; standard input that never ends (/dev/zero) proves that
// reading stops at the limit, since reading it whole would never finish.

@Suite("scmesh send: an oversize payload is refused at the limit, nothing queued")
struct OversizeSendProcessTests {
    static let limit = 100_000

    @Test(
        "send - from an endless standard input stops at max_message_size, over the control socket and over HTTP",
        arguments: [false, true]
    )
    func endlessStandardInput(http: Bool) async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let node = try await nodes.start(
            "a",
            [
                "--set", "transports.tcp.listen=127.0.0.1:0", "--set", "max_message_size=\(Self.limit)",
                "--set", http ? "http.listen=127.0.0.1:0" : "http.enabled=false",
            ]
        )
        for json in [false, true] {
            let refused = try await runScmesh(
                ["send", "--data-dir", node.dataDirectory, strangerPeerHex, "-"] + (json ? ["--json"] : []),
                home: nodes.home,
                standardInput: "/dev/zero"
            )
            #expect(refused.status == 1)
            let said = json ? refused.standardOutput : refused.standardError
            #expect(said.contains("more than the node's max_message_size of \(Self.limit) bytes"), "\(said)")
            #expect(said.contains("nothing was queued"), "\(said)")
            if json {
                let reply = try jsonObject(refused.standardOutput)
                #expect(reply["ok"] as? Bool == false)
                #expect(reply["code"] as? String == "messageTooLarge")
            }
        }
        let outbox = try jsonObject(
            try await nodes.run(["outbox", "--data-dir", node.dataDirectory, "--json"]).standardOutput
        )
        #expect(outbox["total"] as? Int == 0, "\(outbox)")
    }

    @Test("publish - and an emergency broadcast from an endless standard input stop at the topic message limit")
    func endlessTopicInput() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let node = try await nodes.start(
            "a",
            ["--set", "transports.tcp.listen=127.0.0.1:0", "--set", "http.enabled=false"]
        )
        for arguments in [["publish", "/scmesh/global/v1", "-"], ["send", "--emergency", "--broadcast", "-"]] {
            let refused = try await runScmesh(
                arguments + ["--data-dir", node.dataDirectory],
                home: nodes.home,
                standardInput: "/dev/zero"
            )
            #expect(refused.status == 1)
            #expect(
                refused.standardError.contains("more than a topic message's limit of 60000 bytes"),
                "\(arguments): \(refused.standardError)"
            )
            #expect(refused.standardError.contains("nothing was queued"), "\(refused.standardError)")
        }
    }

    @Test(
        "the control socket refuses a send request line over its limit before the line ends, naming the limit; a decoded payload over max_message_size is refused naming both sizes"
    )
    func controlSocketRefusesAtTheLimit() async throws {
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let node = try await nodes.start(
            "a",
            [
                "--set", "transports.tcp.listen=127.0.0.1:0", "--set", "max_message_size=\(Self.limit)",
                "--set", "http.enabled=false",
            ]
        )
        // The line limit is the limit's payload as base64 plus 64 KiB; this request
        // passes it and is never finished (no newline): the reply must come anyway.
        let lineLimit = (Self.limit + 2) / 3 * 4 + 65_536
        let start = Array(#"{"cmd":"send","peer":"\#(strangerPeerHex)","payload_base64":""#.utf8)
        let request = start + [UInt8](repeating: UInt8(ascii: "A"), count: lineLimit + 4096 - start.count)
        let socketPath = node.client.socketPath
        let reply = try await onOwnThread { try unfinishedRequestReply(socketPath: socketPath, request: request) }
        let refusal = try jsonObject(reply)
        #expect(refusal["ok"] as? Bool == false)
        #expect(refusal["code"] as? String == "messageTooLarge")
        let message = try #require(refusal["message"] as? String)
        #expect(message.contains("limit of \(lineLimit) bytes"), "\(message)")
        #expect(message.contains("max_message_size = \(Self.limit)"), "\(message)")
        #expect(message.contains("nothing was queued"), "\(message)")

        // Within the line limit but over max_message_size once decoded.
        let payload = Data(repeating: 7, count: Self.limit + 1).base64EncodedString()
        let decoded = try await node.client.call(.send(SendRequest(peer: strangerPeerHex, payloadBase64: payload)))
        #expect(!decoded.ok)
        #expect(decoded.code == "messageTooLarge")
        #expect(
            decoded.error?.contains(
                "the payload of \(Self.limit + 1) bytes is larger than max_message_size (\(Self.limit) bytes): nothing was queued"
            ) == true,
            "\(decoded.line)"
        )
        let outbox = try await node.client.call(.outbox(MessageQuery()))
        #expect(try outbox.decode(OutboxReply.self).total == 0, "\(outbox.line)")
    }
}

/// Connects to a control socket, writes `request` without its newline (stopping
/// quietly when the node closes the connection), and returns the reply line: empty
/// when none came within 30 s. Blocking: callers run it in `onOwnThread`.
private func unfinishedRequestReply(socketPath: String, request: [UInt8]) throws -> String {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    try #require(descriptor >= 0)
    defer { close(descriptor) }
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    try #require(withUnixSocketAddress(socketPath) { connect(descriptor, $0, $1) } == 0)
    var written = 0
    while written < request.count {
        let count = request[written...].withUnsafeBytes {
            send(descriptor, $0.baseAddress, min($0.count, 16_384), Int32(MSG_NOSIGNAL))
        }
        if count <= 0 { break }
        written += count
    }
    var reply: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while !reply.contains(UInt8(ascii: "\n")) {
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count <= 0 { break }
        reply += buffer[..<count]
    }
    return String(decoding: reply.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
}
