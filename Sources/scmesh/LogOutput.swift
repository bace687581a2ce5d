import Foundation
import Logging
import MeshCore
import Synchronization

/// Where `scmesh run` writes its log, and in which form.
enum LogOutput {
    /// Standard error, as swift-log's stream handler writes it (a terminal, a pipe).
    case standardError
    /// Standard error connected to the systemd journal (`$JOURNAL_STREAM` names it):
    /// each line starts with its syslog priority (`<6>` for info, sd-daemon(3)), and
    /// has no timestamp (the journal adds its own).
    case journal
    /// Appended to a file, one line per entry, with an ISO 8601 timestamp.
    case file(String)

    /// The output for `node.log_file` (resolved against the data directory) and the
    /// environment: a file if configured, the journal if standard error is it.
    static func choose(logFile: String?, dataDirectory: String, environment: [String: String]) -> LogOutput {
        if let logFile {
            return .file(logFile.hasPrefix("/") ? logFile : (dataDirectory as NSString).appendingPathComponent(logFile))
        }
        if let stream = environment["JOURNAL_STREAM"], isJournal(stream) { return .journal }
        return .standardError
    }

    /// Whether `JOURNAL_STREAM` (`device:inode`) is standard error itself (systemd
    /// passes it on to children whose stderr may have been redirected since).
    static func isJournal(_ stream: String) -> Bool {
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    /// Bootstraps swift-log with this output at `level`.
    /// - Throws: `MeshError` `.invalidConfiguration` when the log file cannot be opened.
    func bootstrap(level: Logger.Level) throws {
        switch self {
        case .standardError:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return EscapingLogHandler(base: handler)
            }
        case .journal:
            let sink = LineSink(descriptor: STDERR_FILENO)
            LoggingSystem.bootstrap { label in LineLogHandler(label: label, sink: sink, journal: true, logLevel: level)
            }
        case .file(let path):
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else {
                throw MeshError(
                    .invalidConfiguration,
                    "node.log_file: cannot open \(path) for appending: \(String(cString: strerror(errno))); fix the path or set it to null (stderr)"
                )
            }
            let sink = LineSink(descriptor: descriptor)
            LoggingSystem.bootstrap { label in LineLogHandler(label: label, sink: sink, journal: false, logLevel: level)
            }
        }
    }
}

/// Writes whole lines to a file descriptor, one writer at a time.
final class LineSink: Sendable {
    private let descriptor: Mutex<Int32>

    init(descriptor: Int32) {
        self.descriptor = Mutex(descriptor)
    }

    func write(_ line: String) {
        descriptor.withLock { descriptor in
            var bytes = Array(line.utf8)
            bytes.append(UInt8(ascii: "\n"))
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // nowhere to report a failing log
                }
                offset += written
            }
        }
    }
}

/// A swift-log handler writing one line per entry to a ``LineSink``: for the journal
/// `<priority>label: [source] message metadata`, for a file the same after an ISO 8601
/// timestamp and the level.
struct LineLogHandler: LogHandler {
    let label: String
    let sink: LineSink
    let journal: Bool
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let body = "\(label): \(fields.isEmpty ? "" : fields + " ")[\(event.source)] \(event.message)"
        // One entry is one line: newlines in a message become "\n", and what a peer
        // wrote (terminal escapes, bidi overrides) is shown escaped, never acted on.
        let flat = TerminalText.escaped(body, newlines: "\\n")
        if journal {
            sink.write("<\(Self.syslogPriority(event.level))>\(flat)")
        } else {
            let time = Date().formatted(
                .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)
            )
            sink.write("\(time) \(event.level) \(flat)")
        }
    }

    /// swift-log's level as a syslog priority (sd-daemon(3)).
    static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

/// Passes every entry on to `base` with its message and metadata escaped
/// (``TerminalText``): a peer-supplied string in a log line can neither act on a
/// terminal nor start a line of its own.
struct EscapingLogHandler<Base: LogHandler>: LogHandler {
    var base: Base

    var logLevel: Logger.Level {
        get { base.logLevel }
        set { base.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { base.metadata }
        set { base.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { base[metadataKey: key] }
        set { base[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: TerminalText.escaped(event.message.description, newlines: "\\n"))
        event.metadata = event.metadata?.mapValues { .string(TerminalText.escaped($0.description, newlines: "\\n")) }
        base.log(event: event)
    }
}
