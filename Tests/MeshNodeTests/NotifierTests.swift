import Foundation
import Logging
import MeshCore
import MeshNode
import MeshTesting
import TestSupport
import Testing

/// The notifier on its own: the environment a hook gets, the `notify:` keys, and the
/// bound on programs running at once (with real `/bin/sh` processes).
@Suite struct NotifierTests {
    static func message(_ payload: [UInt8], topic: String? = nil, emergency: Bool = false) -> InboundMessage {
        InboundMessage(
            id: MessageID.random(),
            from: PeerID.random(),
            payload: payload,
            transport: "tcp",
            topic: topic,
            emergency: emergency
        )
    }

    @Test("the environment: a text's first KiB cut between characters, NUL replaced; binary has no text")
    func environment() {
        let long = String(repeating: "é", count: 600)  // 1,200 bytes
        let text = Self.message(Array(long.utf8), topic: "/t/v1", emergency: true)
        let environment = Notifier.environment(for: text, alias: "bob")
        #expect(environment["SCMESH_TEXT"] == String(repeating: "é", count: 512))
        #expect(environment["SCMESH_BYTES"] == "1200")
        #expect(environment["SCMESH_EMERGENCY"] == "1" && environment["SCMESH_TOPIC"] == "/t/v1")
        #expect(environment["SCMESH_FROM_ALIAS"] == "bob" && environment["SCMESH_FROM"] == text.from.hex)
        let nul = Notifier.environment(for: Self.message(Array("a\0b".utf8)), alias: nil)
        #expect(nul["SCMESH_TEXT"] == "a\u{FFFD}b" && nul["SCMESH_FROM_ALIAS"] == "")
        let binary = Notifier.environment(for: Self.message([0xFF, 0xFE, 0x00]), alias: nil)
        #expect(binary["SCMESH_TEXT"] == "" && binary["SCMESH_BYTES"] == "3" && binary["SCMESH_EMERGENCY"] == "0")
    }

    @Test("notify: defaults, --set values, a bad value refused naming its key")
    func config() throws {
        let defaults = try NodeConfiguration.load(yaml: "", source: "f", registry: .builtIn).notify
        #expect(defaults == NodeConfiguration.NotifySettings())
        #expect(defaults.command.isEmpty && defaults.desktop == .never && defaults.maxRunning == 4)
        let set = try NodeConfiguration.load(
            yaml: "",
            source: "f",
            overrides: ["notify.command=echo hi", "notify.desktop=auto", "notify.max_running=2"],
            registry: .builtIn
        ).notify
        #expect(set.command == "echo hi" && set.desktop == .auto && set.maxRunning == 2)
        func error(_ yaml: String) -> String {
            do {
                _ = try NodeConfiguration.load(yaml: yaml, source: "test.yaml", registry: .builtIn)
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        #expect(error("notify:\n  desktop: loud\n").contains("desktop: must be auto or never, got \"loud\""))
        #expect(error("notify:\n  max_running: 0\n").contains("max_running: must be 1 to 64"))
        #expect(error("notify:\n  comand: x\n").contains("unknown key notify.comand"))
    }

    @Test("desktop: auto without a session bus says so and sends nothing")
    func desktopWithoutBus() throws {
        // A notify-send on PATH, so that only the missing bus keeps the notifier idle.
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let program = directory.file("notify-send")
        #expect(FileManager.default.createFile(atPath: program, contents: Data("#!/bin/sh\n".utf8)))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: program)
        var settings = NodeConfiguration.NotifySettings()
        settings.desktop = .auto
        let withBus = ["PATH": directory.path, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"]
        #expect(Notifier(settings: settings, environment: withBus, logger: Logger(label: "t")).isActive)
        let notifier = Notifier(settings: settings, environment: ["PATH": directory.path], logger: Logger(label: "t"))
        #expect(!notifier.isActive)
    }

    @Test(
        "at most max_running hooks at once: a message meanwhile raises none; then one runs again",
        .timeLimit(.minutes(3))
    )
    func busy() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let gate = directory.file("gate")
        var settings = NodeConfiguration.NotifySettings()
        settings.maxRunning = 1
        settings.timeoutSeconds = 120
        // Each hook records itself, then waits for the gate file, at most 2,000 polls
        // (a hook started after the test removed its directory ends on its own).
        settings.command =
            "touch \(directory.path)/ran.$SCMESH_MESSAGE_ID; i=0; while [ ! -f \(gate) ] && [ $i -lt 2000 ]; do i=$((i+1)); sleep 0.02; done"
        let notifier = Notifier(settings: settings, logger: Logger(label: "t"))
        let first = Self.message(Array("one".utf8))
        notifier.received(first, alias: nil)
        try await eventually("the first hook runs") {
            FileManager.default.fileExists(atPath: directory.file("ran.\(first.id.hex)"))
        }
        let second = Self.message(Array("two".utf8))
        notifier.received(second, alias: nil)
        #expect(notifier.counters["notify.busy"] == 1)
        _ = FileManager.default.createFile(atPath: gate, contents: nil)
        let third = Self.message(Array("three".utf8))
        try await eventually("a hook runs again once the first ended") {
            notifier.received(third, alias: nil)
            return FileManager.default.fileExists(atPath: directory.file("ran.\(third.id.hex)"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("ran.\(second.id.hex)")))
    }

    @Test(
        "a hook still running at notify.timeout_seconds is killed and counted; one that fails is counted",
        .timeLimit(.minutes(3))
    )
    func timedOutAndFailed() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let clock = ManualClock()
        var settings = NodeConfiguration.NotifySettings()
        settings.timeoutSeconds = 30
        // The shell becomes `sleep` (same process ID), which would outlive the test's
        // bound on its own.
        settings.command = "echo $$ > \(directory.path)/pid.$SCMESH_MESSAGE_ID; exec sleep 600"
        let notifier = Notifier(settings: settings, clock: clock, logger: Logger(label: "t"))
        let message = Self.message(Array("slow".utf8))
        let pidFile = directory.file("pid.\(message.id.hex)")
        notifier.received(message, alias: nil)
        var pid: pid_t = 0
        try await eventually("the hook wrote its process ID") {
            pid =
                (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap {
                    pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines))
                } ?? 0
            return pid > 0
        }
        await clock.waitForSleepers(atLeast: 1)
        #expect(kill(pid, 0) == 0, "the hook runs before its time is up")
        clock.advance(by: .seconds(30))
        try await eventually("the hook is killed and counted") {
            notifier.counters["notify.timed_out"] == 1 && kill(pid, 0) != 0
        }
        #expect(notifier.counters["notify.failed"] == nil)

        var failing = settings
        failing.command = "exit 3"
        let second = Notifier(settings: failing, clock: clock, logger: Logger(label: "t"))
        second.received(Self.message(Array("x".utf8)), alias: nil)
        try await eventually("the failed hook is counted") { second.counters["notify.failed"] == 1 }
        #expect(second.counters["notify.timed_out"] == nil)
    }
}
