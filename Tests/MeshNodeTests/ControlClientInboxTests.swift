import Foundation
import Glibc
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// `ControlClient.inbox(payloads: false)` against a node started before the `payloads`
// field existed: such a node refuses the field as unknown, and the client asks again
// without it instead of failing until that node restarts. The old node is a Unix
// socket in the data directory that answers as it did (its refusal text, word for word),
// served on its own thread (accept and recv block).

@Suite("control client: inbox listings from a node older than payloads:false")
struct ControlClientInboxTests {
    /// An old node's control socket: answers one request line per connection, refusing a `payloads` field as the node did before it existed, and
    /// returns the request lines it read.
    final class OldNode: Sendable {
        let descriptor: Int32

        init(socketPath path: String) throws {
            descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw MeshError(.invalidArgument, "socket failed") }
            let descriptor = descriptor
            let bound = withUnixSocketAddress(path) { bind(descriptor, $0, $1) }
            guard bound == 0, listen(descriptor, 4) == 0 else {
                close(descriptor)
                throw MeshError(.invalidArgument, "bind/listen failed: \(String(cString: strerror(errno)))")
            }
        }

        deinit { close(descriptor) }

        static func reply(to line: String) -> String {
            if line.contains(#""limit":0"#) {
                return #"{"ok":false,"code":"invalidArgument","error":"request field \"limit\" must be at least 1"}"#
            }
            if line.contains(#""payloads""#) {
                return
                    #"{"ok":false,"code":"invalidArgument","error":"unknown request field \"payloads\" (known fields: after, cmd, limit)"}"#
            }
            return #"{"ok":true,"messages":[],"total_received":0}"#
        }

        /// Serves connections on the calling thread until ``stop()``.
        func serve() -> [String] {
            var lines: [String] = []
            while true {
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else { return lines }  // stopped
                defer { close(connection) }
                var line: [UInt8] = []
                var byte: UInt8 = 0
                while recv(connection, &byte, 1, 0) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
                let text = String(decoding: line, as: UTF8.self)
                lines.append(text)
                let answer = Array((Self.reply(to: text) + "\n").utf8)
                _ = answer.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }

        /// Ends ``serve()``: its `accept` returns an error (Linux wakes it on a shutdown).
        func stop() {
            shutdown(descriptor, Int32(SHUT_RDWR))
        }
    }

    static func dataDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + "scmesh-old-node-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("payloads:false refused as an unknown field: asked again without it, the listing comes with payloads")
    func fallsBackWithoutTheField() async throws {
        let directory = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = ControlClient(dataDirectory: directory)
        let old = try OldNode(socketPath: client.socketPath)
        async let served = onOwnThread { old.serve() }
        let reply = try await client.inbox(after: 3, limit: 10, payloads: false)
        old.stop()
        let lines = try await served
        #expect(reply.ok, "\(reply.line)")
        #expect(try reply.decode(InboxReply.self).messages.isEmpty)
        #expect(lines.count == 2)
        #expect(lines.first?.contains(#""payloads":false"#) == true, "\(lines)")
        #expect(
            lines.last.map { !$0.contains("payloads") && $0.contains(#""after":3"#) && $0.contains(#""limit":10"#) }
                == true,
            "\(lines)"
        )
    }

    @Test("any other refusal is returned as it is, after one request; payloads:true never sends the field")
    func otherRefusalsAreNotRetried() async throws {
        let directory = try Self.dataDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = ControlClient(dataDirectory: directory)
        let old = try OldNode(socketPath: client.socketPath)
        async let served = onOwnThread { old.serve() }
        let refused = try await client.inbox(limit: 0, payloads: false)
        let withPayloads = try await client.inbox(payloads: true)
        old.stop()
        let lines = try await served
        #expect(!refused.ok && refused.error == #"request field "limit" must be at least 1"#, "\(refused.line)")
        #expect(withPayloads.ok)
        #expect(lines.count == 2 && !lines[1].contains("payloads"), "\(lines)")
    }
}
