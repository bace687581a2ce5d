import Logging
import Synchronization

/// Turns repeated log lines of one kind into one line per interval with a count, so
/// that no remote party can make the log grow faster than a fixed bound.
///
/// The first occurrence of a kind in an interval is logged as it is; the others are
/// counted, and when the interval is over the count becomes one summary line
/// ("refused 4,312 connections in the last 10 s: max_inbound"). The summary is
/// written by the next ``note(_:level:_:summary:)`` of that kind or by ``flush()``
/// (which an owner calls every interval, e.g. from its run loop). So each kind writes
/// at most two lines per interval, and at most ``maximumKinds`` kinds are tracked
/// apart (more fold into one extra `"other"` kind): the log grows by at most
/// `2 × (maximumKinds + 1)` lines per interval, whatever arrives.
///
/// Kinds are fixed strings chosen by the code ("tcp.refused.max_inbound"), never
/// remote data. Every occurrence is also counted for good in ``totals``, for status
/// counters.
///
/// ```swift
/// let refusals = LogLimiter(logger: logger, interval: .seconds(10))
/// refusals.note("max_inbound", "TCP refused a connection from \(remote): max_inbound (128) connections are open") {
///     "TCP refused \(LogLimiter.formatted($0)) more connections in the last \(LogLimiter.formatted($1)): max_inbound"
/// }
/// ```
public final class LogLimiter: Sendable {
    /// How long one interval lasts.
    public let interval: Duration
    /// How many kinds are tracked apart; the rest share the kind `"other"`.
    public let maximumKinds: Int

    private struct Window {
        var started: ContinuousClock.Instant
        /// Occurrences after the first in this window (not yet reported).
        var suppressed = 0
        var level: Logger.Level
        var summary: @Sendable (Int, Duration) -> String
    }

    private struct State {
        var windows: [String: Window] = [:]
        var totals: [String: Int] = [:]
    }

    private let logger: Logger
    private let clock: any MeshClock
    private let state = Mutex(State())

    /// Creates a limiter.
    /// - Parameters:
    ///   - logger: Where the lines go.
    ///   - interval: One line (plus one summary) per kind per interval.
    ///   - maximumKinds: Kinds tracked apart (at least 1).
    ///   - clock: The time source (a test clock in tests).
    public init(
        logger: Logger,
        interval: Duration = .seconds(10),
        maximumKinds: Int = 64,
        clock: any MeshClock = SystemClock()
    ) {
        self.logger = logger
        self.interval = interval
        self.maximumKinds = max(1, maximumKinds)
        self.clock = clock
    }

    /// Reports one occurrence of `kind`.
    /// - Parameters:
    ///   - kind: A fixed name for this kind of line (not remote data).
    ///   - level: The level of both the line and its summary.
    ///   - message: The line, logged when this is the first occurrence in an interval.
    ///   - summary: The summary line for `count` further occurrences over `elapsed`.
    public func note(
        _ kind: String,
        level: Logger.Level = .warning,
        _ message: @autoclosure () -> String,
        summary: @escaping @Sendable (_ count: Int, _ elapsed: Duration) -> String
    ) {
        let now = clock.now
        var lines: [(Logger.Level, String)] = []
        let logFirst = state.withLock { state -> Bool in
            let apart = state.totals.count - (state.totals["other"] == nil ? 0 : 1)
            let kind = state.totals[kind] != nil || apart < maximumKinds ? kind : "other"
            state.totals[kind, default: 0] += 1
            if var window = state.windows[kind], now - window.started < interval {
                window.suppressed += 1
                state.windows[kind] = window
                return false
            }
            if let old = state.windows[kind], old.suppressed > 0 {
                lines.append((old.level, old.summary(old.suppressed, now - old.started)))
            }
            state.windows[kind] = Window(started: now, level: level, summary: summary)
            return true
        }
        for (level, line) in lines { logger.log(level: level, "\(line)") }
        if logFirst { logger.log(level: level, "\(message())") }
    }

    /// Writes the summary of every kind whose interval is over and forgets those
    /// windows (the next occurrence is logged as a first again).
    public func flush() {
        let now = clock.now
        let lines = state.withLock { state -> [(Logger.Level, String)] in
            var lines: [(Logger.Level, String)] = []
            for (kind, window) in state.windows where now - window.started >= interval {
                if window.suppressed > 0 {
                    lines.append((window.level, window.summary(window.suppressed, now - window.started)))
                }
                state.windows[kind] = nil
            }
            return lines
        }
        for (level, line) in lines { logger.log(level: level, "\(line)") }
    }

    /// Every occurrence noted so far, by kind (logged or not).
    public var totals: [String: Int] {
        state.withLock { $0.totals }
    }

    /// Runs ``flush()`` every interval on `clock` until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
            } catch {
                return
            }
            flush()
        }
    }

    /// `4312` → `"4,312"`.
    public static func formatted(_ count: Int) -> String {
        let digits = String(count.magnitude)
        var result = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(digit)
        }
        return count < 0 ? "-" + result : result
    }

    /// `.seconds(10)` → `"10 s"`; under ten seconds with one decimal (`"2.5 s"`).
    public static func formatted(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if seconds >= 10 { return "\(seconds) s" }
        let tenths = seconds * 10 + attoseconds / 100_000_000_000_000_000
        return "\(tenths / 10).\(tenths % 10) s"
    }
}
