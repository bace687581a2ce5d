import Foundation
import Logging
import MeshCore
import Subprocess
import Synchronization
import SystemPackage

/// Tells the user that a message arrived (`notify:`): runs `notify.command` through
/// `/bin/sh -c` with the message in its environment, and with `notify.desktop: auto`
/// shows a desktop notification through `notify-send`.
///
/// The text goes in the environment, never in the command line, so no message can
/// inject shell syntax. At most `notify.max_running` programs run at once (a message
/// that arrives while that many run raises none, counted and logged); each is killed
/// after `notify.timeout_seconds`. Failures are logged at most once a minute per kind.
/// The ``ContactFilter`` calls ``received(_:alias:)`` for each new inbox entry of a
/// peer that is not muted.
public final class Notifier: Sendable {
    /// The environment a command gets for one message (beside the node's own).
    public static func environment(for message: InboundMessage, alias: String?) -> [String: String] {
        var environment = [
            "SCMESH_MESSAGE_ID": message.id.hex,
            "SCMESH_FROM": message.from.hex,
            "SCMESH_FROM_ALIAS": alias ?? "",
            "SCMESH_BYTES": String(message.payload.count),
            "SCMESH_EMERGENCY": message.emergency ? "1" : "0",
            "SCMESH_TOPIC": message.topic ?? "",
            "SCMESH_TEXT": "",
        ]
        if let text = String(validating: message.payload, as: UTF8.self) {
            environment["SCMESH_TEXT"] = head(of: text, bytes: textBytes)
        }
        return environment
    }

    /// The most bytes of a text in `SCMESH_TEXT`.
    public static let textBytes = 1024

    /// The start of `text`, at most `bytes` bytes of UTF-8, cut between characters;
    /// NUL characters (which no environment can hold) become U+FFFD.
    static func head(of text: String, bytes: Int) -> String {
        var result = ""
        var used = 0
        for character in text {
            let piece = character == "\0" ? "\u{FFFD}" : String(character)
            used += piece.utf8.count
            guard used <= bytes else { break }
            result += piece
        }
        return result
    }

    let settings: NodeConfiguration.NotifySettings
    private let logger: Logger
    private let failures: LogLimiter
    private let running = Mutex(0)
    private let baseEnvironment: [String: String]
    /// Times `notify.timeout_seconds`.
    private let clock: any MeshClock
    /// `notify-send`'s path when desktop notifications can be shown.
    private let notifySend: String?

    /// Creates a notifier; with `desktop: auto` and no session bus or no `notify-send`,
    /// says so once.
    public init(
        settings: NodeConfiguration.NotifySettings,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        clock: any MeshClock = SystemClock(),
        logger: Logger
    ) {
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.baseEnvironment = environment
        failures = LogLimiter(logger: logger, interval: .seconds(60))
        if settings.desktop == .auto {
            let found = Self.program("notify-send", path: environment["PATH"])
            if environment["DBUS_SESSION_BUS_ADDRESS"] == nil {
                logger.notice("notify.desktop is auto, but the node has no session bus: no desktop notifications")
                notifySend = nil
            } else if found == nil {
                logger.notice(
                    "notify.desktop is auto, but notify-send is not installed (apt install libnotify-bin): no desktop notifications"
                )
                notifySend = nil
            } else {
                notifySend = found
            }
        } else {
            notifySend = nil
        }
    }

    /// Whether it does anything at all.
    public var isActive: Bool { !settings.command.isEmpty || notifySend != nil }

    /// Notifications skipped and programs that failed, by kind (`notify.busy`,
    /// `notify.failed`, `notify.timed_out`).
    public var counters: [String: Int] { failures.totals }

    /// Raises the notifications for one received message; returns at once (the
    /// programs run in the background).
    public func received(_ message: InboundMessage, alias: String?) {
        let environment = Self.environment(for: message, alias: alias)
        if !settings.command.isEmpty {
            start(label: "notify.command", "/bin/sh", ["-c", settings.command], environment, message)
        }
        if let notifySend {
            let sender = alias ?? message.from.short
            let title = message.emergency ? "🚨 EMERGENCY from \(sender)" : "SCMesh: \(sender)"
            let text = environment["SCMESH_TEXT"].flatMap { $0.isEmpty ? nil : Self.head(of: $0, bytes: 200) }
            start(
                label: "notify.desktop",
                notifySend,
                ["--app-name=SCMesh", title, text ?? "\(message.payload.count) bytes"],
                [:],
                message
            )
        }
    }

    private func start(
        label: String,
        _ program: String,
        _ arguments: [String],
        _ environment: [String: String],
        _ message: InboundMessage
    ) {
        let admitted = running.withLock { count in
            guard count < settings.maxRunning else { return false }
            count += 1
            return true
        }
        guard admitted else {
            failures.note(
                "notify.busy",
                level: .warning,
                "\(label): \(settings.maxRunning) (notify.max_running) already running; none for message \(message.id.hex)"
            ) { "\(label): \($0) more notifications skipped in the last \(LogLimiter.formatted($1)): busy" }
            return
        }
        let entries = baseEnvironment.merging(environment) { $1 }.map { Array("\($0.key)=\($0.value)".utf8) + [0] }
        let timeout = settings.timeoutSeconds
        Task { [self, failures, clock] in
            defer { running.withLock { $0 -= 1 } }
            // The program races its timeout; cancelling the run kills it (SIGKILL).
            let outcome = await withTaskGroup(of: Outcome.self) { group in
                group.addTask {
                    do {
                        let result = try await Subprocess.run(
                            .path(FilePath(program)),
                            arguments: Arguments(arguments),
                            environment: .custom(entries),
                            input: .none,
                            output: .discarded,
                            error: .discarded
                        )
                        return .ended(result.terminationStatus)
                    } catch {
                        return Task.isCancelled ? .timedOut : .failedToStart("\(error)")
                    }
                }
                group.addTask {
                    try? await clock.sleep(until: clock.now + .seconds(timeout))
                    return .timedOut
                }
                let first = await group.next() ?? .timedOut
                group.cancelAll()
                return first
            }
            switch outcome {
            case .ended(.exited(0)):
                break
            case .ended(.exited(let code)):
                failures.note("notify.failed", level: .warning, "\(label) exited with status \(code)") {
                    "\(label): \($0) more failures in the last \(LogLimiter.formatted($1))"
                }
            case .ended:
                break  // ended by a signal it was sent from elsewhere
            case .timedOut:
                failures.note(
                    "notify.timed_out",
                    level: .warning,
                    "\(label) still ran after \(timeout) s (notify.timeout_seconds), killed"
                ) { "\(label): \($0) more killed in the last \(LogLimiter.formatted($1))" }
            case .failedToStart(let reason):
                failures.note("notify.failed", level: .warning, "\(label): cannot start \(program): \(reason)") {
                    "\(label): \($0) more failures in the last \(LogLimiter.formatted($1))"
                }
            }
        }
    }

    /// How a notification program ended.
    private enum Outcome: Sendable {
        case ended(TerminationStatus)
        case timedOut
        case failedToStart(String)
    }

    /// The first executable `name` on `path` (colon-separated).
    static func program(_ name: String, path: String?) -> String? {
        for directory in (path ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
