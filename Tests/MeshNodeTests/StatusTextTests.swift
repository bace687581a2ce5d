import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// `scmesh status` as text, and the exposure notice of `scmesh run`.

@Suite("status text and exposure notice")
struct StatusTextTests {
    @Test("the built-in config warns: mdns listens on 0.0.0.0 and publishes the peer ID; BLE advertises")
    func defaultConfigWarns() throws {
        let config = try NodeConfiguration.load(file: nil, environment: [:])
        let line = try #require(ExposureNotice.line(for: config))
        #expect(!line.contains("\n"))
        #expect(line.contains("listens beyond loopback (mdns 0.0.0.0:0)"), "\(line)")
        #expect(line.contains("its peer ID over mdns"), "\(line)")
        #expect(line.contains("ble"), "\(line)")
        #expect(!line.contains("tcp 127.0.0.1"), "loopback listeners are not exposure: \(line)")
    }

    @Test("a loopback-only node gets no notice; a TCP listener on all addresses does")
    func loopbackOnly() throws {
        let quiet = ["transports.mdns.enabled=false", "transports.ble.enabled=false"]
        let local = try NodeConfiguration.load(
            file: nil,
            environment: [:],
            overrides: quiet + [#"transports.tcp.listen=["[::1]:7420"]"#]
        )
        #expect(ExposureNotice.line(for: local) == nil)
        let open = try NodeConfiguration.load(
            file: nil,
            environment: [:],
            overrides: quiet + ["transports.tcp.listen=0.0.0.0:7420"]
        )
        #expect(
            ExposureNotice.line(for: open)
                == "this node listens beyond loopback (tcp 0.0.0.0:7420) on the local network; see README \"Exposure\" to narrow it"
        )
        let cautious = try NodeConfiguration.load(
            file: nil,
            environment: [:],
            overrides: ["transports.ble.enabled=false", "transports.mdns.discovery_mode=cautious"]
        )
        let line = try #require(ExposureNotice.line(for: cautious))
        #expect(line.contains("its presence over mdns") && !line.contains("peer ID"), "\(line)")
    }

    @Test(
        "status text: name and peer ID first, relay/peers/queues in one line, transports preferred first with the port the OS chose, data dir last"
    )
    func statusTextOfARunningNode() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let data = directory.file("n")
        let log = directory.file("run.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let process = try ChildProcess(
            executable: scmeshExecutable.path,
            arguments: [
                "run", "--data-dir", data, "--set", "transports.tcp.listen=0.0.0.0:0", "--set",
                "transports.mdns.enabled=false",
                "--set", "transports.ble.enabled=false", "--set", "node.name=kitchen",
            ],
            environment: scmeshEnvironment(home: directory.path),
            standardError: .handle(try FileHandle(forWritingTo: URL(fileURLWithPath: log)))
        )
        defer { stopProcess(process) }
        let client = ControlClient(dataDirectory: data)
        // The control socket answers before the router has started its transports: wait
        // for TCP to report its address too.
        try await eventually("the node answers with its TCP transport listening", attempts: 1500) {
            try await client.call(.status).decode(StatusReply.self).transports.contains {
                $0.name == "tcp" && !$0.addresses.isEmpty
            }
        }

        // --json: the TCP transport's real address (port 0 in the config).
        let json = try await client.call(.status).decode(StatusReply.self)
        let tcp = try #require(json.transports.first { $0.name == "tcp" })
        let bound = try #require(tcp.addresses.first)
        #expect(bound.hasPrefix("0.0.0.0:") && bound != "0.0.0.0:0", "\(tcp.addresses)")

        let text = try await runScmesh(["status", "--data-dir", data], home: directory.path)
        #expect(text.status == 0)
        let lines = text.standardOutput.trimmingCharacters(in: .newlines).split(
            separator: "\n",
            omittingEmptySubsequences: false
        ).map(String.init)
        #expect(lines[0] == "kitchen  \(json.peerID.hex)")
        #expect(lines[1].hasPrefix("relay on · 0 peers · network offline · inbox 0 · outbox 0 · up "), "\(lines[1])")
        #expect(lines[2].isEmpty)
        #expect(lines[3].hasPrefix("TRANSPORT") && lines[3].contains("LISTENING ON"))
        // The enabled transports only (the default config has no loopback); columns aligned.
        #expect(lines[4].hasPrefix("tcp ") && lines[4].hasSuffix(bound), "\(lines[4])")
        #expect(!text.standardOutput.contains("loopback"))
        #expect(
            lines[4].range(of: "running")?.lowerBound.utf16Offset(in: lines[4])
                == lines[3].range(of: "STATE")?.lowerBound.utf16Offset(in: lines[3])
        )
        #expect(lines.last == "data dir    \(data)")
        #expect(lines.count <= 24, "one screen")

        // The run printed the exposure notice once, in one line.
        let stderr = try String(contentsOfFile: log, encoding: .utf8)
        let notices = stderr.split(separator: "\n").filter {
            $0.hasPrefix("scmesh: note: this node listens beyond loopback")
        }
        #expect(notices.count == 1, "\(stderr)")
        #expect(notices.first?.contains("tcp 0.0.0.0:0") == true)
    }
}
