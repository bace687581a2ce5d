import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// `scmesh send -` of a large payload: bytes and rate on a terminal, nothing when piped.
// The terminal is a real pseudo-terminal made by util-linux's `script`.

@Suite("send progress")
struct SendProgressProcessTests {
    @Test("3 MiB from standard input: progress lines on a terminal's stderr, none when stderr is a pipe")
    func progressOnlyOnATerminal() async throws {
        let script = "/usr/bin/script"
        try #require(
            FileManager.default.isExecutableFile(atPath: script),
            "util-linux's script is missing (Debian: bsdutils)"
        )
        let nodes = try NodeProcesses()
        defer { nodes.stop() }
        let directory = nodes.directory
        // Its own port: the upload goes over the HTTP API, which must not lose the
        // default port to another node of the suite.
        let node = try await nodes.startAlone("n")
        let (data, client) = (node.dataDirectory, node.client)
        // A peer that is not there: the message is queued, which is all this needs.
        let peer = strangerPeerHex
        let payload = [UInt8](repeating: 0x5A, count: 3 << 20)
        // A contact, so that no "unknown destination" warning joins the progress lines.
        #expect(try await client.call(.contacts(.add(alias: "stranger", peer: peer, note: nil))).ok)

        let piped = try await runScmesh(
            ["send", "--data-dir", data, peer, "-"],
            environment: scmeshEnvironment(home: directory.path),
            input: payload
        )
        #expect(piped.status == 0, "\(piped.standardError)")
        #expect(piped.standardError.isEmpty, "no progress into a pipe: \(piped.standardError)")
        #expect(piped.standardOutput.hasPrefix("queued message"))

        let file = directory.file("payload.bin")
        try Data(payload).write(to: URL(fileURLWithPath: file))
        let command = "'\(scmeshExecutable.path)' send --data-dir '\(data)' \(peer) - < '\(file)'"
        let terminal = try await runProcess(script, ["--quiet", "--return", "--command", command, "/dev/null"])
        let transcript = String(decoding: terminal.output, as: UTF8.self)
        #expect(terminal.status == 0, "\(transcript)")
        // Standard input from a file is uploaded while it is read: the line counts bytes sent.
        #expect(transcript.contains("sent 3.0 MiB in "), "\(transcript)")
        #expect(transcript.contains("MiB/s); the node is storing it"), "\(transcript)")
        #expect(transcript.contains("the node stored 3.0 MiB in "), "\(transcript)")
        #expect(transcript.contains("queued message"), "\(transcript)")
        let outbox = try await client.call(.outbox(MessageQuery())).decode(OutboxReply.self)
        #expect(outbox.total == 2)
    }
}
