import Foundation
import MeshCore
import MeshNode
import TestSupport
import Testing

// "Fits Linux" (issue 15): --version, shell completions, the systemd unit.

@Suite("scmesh on Linux: version, completions, service unit")
struct LinuxFitProcessTests {
    @Test("scmesh --version prints the one version string and exits 0")
    func version() async throws {
        let home = try TemporaryDirectory()
        defer { home.cleanUp() }
        let result = try await runScmesh(["--version"], home: home.path)
        #expect(result.status == 0)
        #expect(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines) == SCMeshVersion.description)
        #expect(SCMeshVersion.description.hasPrefix("scmesh \(SCMeshVersion.current)"))
    }

    @Test("completion scripts for bash, zsh and fish know the subcommands", arguments: ["bash", "zsh", "fish"])
    func completions(shell: String) async throws {
        let home = try TemporaryDirectory()
        defer { home.cleanUp() }
        let result = try await runScmesh(["--generate-completion-script", shell], home: home.path)
        #expect(result.status == 0, "\(result.standardError)")
        for command in ["invite", "join", "status", "send"] {
            #expect(result.standardOutput.contains(command), "\(shell) completion lacks \(command)")
        }
    }

    @Test(
        "an installed scmesh is one file: a copy of the binary alone in another directory has its built-in config (no resource bundle beside it)"
    )
    func binaryCopiedAloneHasItsBuiltInConfig() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let copy = directory.file("scmesh")
        try FileManager.default.copyItem(atPath: scmeshExecutable.path, toPath: copy)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["scmesh"])
        let result = try await runProcess(copy, ["config", "check"])
        #expect(result.status == 0, "\(result.standardError)")
        let checked = String(decoding: result.output, as: UTF8.self)
        #expect(checked.contains("announce_interval_ms: 3600000"), "\(checked.prefix(400))")
    }

    @Test(
        "Config/scmesh.service passes systemd-analyze verify, runs `scmesh run` as a DynamicUser with its StateDirectory as data dir"
    )
    func serviceUnit() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let unit = try String(contentsOf: root.appendingPathComponent("Config/scmesh.service"), encoding: .utf8)
        let settings = unit.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }.map(String.init)
        #expect(settings.contains("DynamicUser=yes"))
        #expect(settings.contains("StateDirectory=scmesh"))
        #expect(settings.contains("Environment=SCMESH_DATA_DIR=/var/lib/scmesh"))
        let execStart = try #require(settings.first { $0.hasPrefix("ExecStart=") })
        #expect(execStart == "ExecStart=/usr/local/bin/scmesh run")
        let analyze = "/usr/bin/systemd-analyze"
        try #require(
            FileManager.default.isExecutableFile(atPath: analyze),
            "systemd-analyze is missing: run scripts/setup.sh --test"
        )
        // Verify the unit as written, with ExecStart pointing at the binary just built.
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let copy = directory.file("scmesh.service")
        try unit.replacingOccurrences(of: "/usr/local/bin/scmesh", with: scmeshExecutable.path)
            .write(toFile: copy, atomically: true, encoding: .utf8)
        let result = try await runProcess(analyze, ["verify", copy])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardError.isEmpty, "\(result.standardError)")
    }
}
