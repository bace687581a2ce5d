import Foundation
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

// `node.log_file` and the journald form of standard error.

@Suite("log output")
struct LogOutputProcessTests {
    static let quiet = [
        "--set", "transports.tcp.listen=127.0.0.1:0", "--set", "transports.mdns.enabled=false",
        "--set", "transports.ble.enabled=false",
    ]

    @Test("node.log_file: the log is appended to DATA-DIR/<file> (mode 0600) with timestamps, not written to stderr")
    func logFile() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let data = directory.file("n")
        let stderrPath = directory.file("stderr")
        let node = try start(
            ["run", "--data-dir", data, "--set", "node.log_file=node.log"] + Self.quiet,
            stderr: stderrPath,
            home: directory.path
        )
        defer { stopProcess(node) }
        let log = (data as NSString).appendingPathComponent("node.log")
        // The control socket answers once the service group (with its signal handlers) runs.
        try await eventually("the node answers", attempts: 1500) {
            try await ControlClient(dataDirectory: data).call(.status).ok
        }
        try await eventually("the log file says the node started", attempts: 1500) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("starting")
        }
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        let starting = try #require(lines.first { $0.contains("starting") })
        #expect(
            starting.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z info scmesh: "#, options: .regularExpression)
                != nil,
            "\(starting)"
        )
        let mode = try FileManager.default.attributesOfItem(atPath: log)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        kill(node.processIdentifier, SIGTERM)
        try await eventually("the node exits", attempts: 1500) { !node.isRunning }
        let stderr = try String(contentsOfFile: stderrPath, encoding: .utf8)
        #expect(!stderr.contains("starting"), "the log went to stderr too: \(stderr)")
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains("stopped"))
    }

    @Test(
        "stderr connected to the journal ($JOURNAL_STREAM = its device:inode): lines carry syslog priorities, no timestamps"
    )
    func journalFormat() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: scmeshExecutable.path),
            "build scmesh first: \(scmeshExecutable.path)"
        )
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let data = directory.file("n")
        let stderrPath = directory.file("stderr")
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        var info = stat()
        #expect(stat(stderrPath, &info) == 0)
        let node = try start(
            ["run", "--data-dir", data] + Self.quiet,
            stderr: stderrPath,
            home: directory.path,
            extra: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]
        )
        defer { stopProcess(node) }
        try await eventually("the node logs that it started", attempts: 1500) {
            ((try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "").contains("starting")
        }
        let starting = try #require(
            try String(contentsOfFile: stderrPath, encoding: .utf8).split(separator: "\n").first {
                $0.contains("starting")
            }
        )
        #expect(starting.hasPrefix("<6>scmesh: "), "\(starting)")
        // A JOURNAL_STREAM that is not stderr (inherited, then redirected) changes nothing.
        let other = directory.file("other")
        let plain = try start(
            ["run", "--data-dir", directory.file("m")] + Self.quiet,
            stderr: other,
            home: directory.path,
            extra: ["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]
        )
        defer { stopProcess(plain) }
        try await eventually("the second node logs that it started", attempts: 1500) {
            ((try? String(contentsOfFile: other, encoding: .utf8)) ?? "").contains("starting")
        }
        let line = try #require(
            try String(contentsOfFile: other, encoding: .utf8).split(separator: "\n").first { $0.contains("starting") }
        )
        #expect(!line.hasPrefix("<"), "\(line)")
    }

    private func start(
        _ arguments: [String],
        stderr: String,
        home: String,
        extra: [String: String] = [:]
    ) throws -> ChildProcess {
        if !FileManager.default.fileExists(atPath: stderr) {
            _ = FileManager.default.createFile(atPath: stderr, contents: nil)
        }
        return try ChildProcess(
            executable: scmeshExecutable.path,
            arguments: arguments,
            environment: scmeshEnvironment(home: home).merging(extra) { $1 },
            standardError: .handle(try FileHandle(forWritingTo: URL(fileURLWithPath: stderr)))
        )
    }
}
