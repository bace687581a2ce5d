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
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let script = "/usr/bin/script"
        try #require(
            FileManager.default.isExecutableFile(atPath: script),
            "util-linux's script is missing (Debian: bsdutils)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let data = directory.file("n")
        let node = try startScmesh(
            [
                "run", "--data-dir", data, "--set", "transports.tcp.listen=127.0.0.1:0", "--set",
                "transports.mdns.enabled=false",
                "--set", "transports.ble.enabled=false", "--set", "transports.loopback.enabled=false",
                // Its own port: the upload goes over the HTTP API, which must not lose the
                // default port to another node of the suite.
                "--set", "http.listen=127.0.0.1:0",
            ],
            home: directory.path
        )
        defer { stopProcess(node) }
        let client = ControlClient(dataDirectory: data)
        try await eventually("the node answers", attempts: 1500) { try await client.call(.status).ok }
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
