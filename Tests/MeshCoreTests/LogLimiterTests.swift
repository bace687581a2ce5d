import Logging
import MeshCore
import MeshTesting
import Synchronization
import Testing

/// Collects log lines.
private final class Lines: Sendable {
    private let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test.limiter") { _ in Handler(lines: self) }
    }

    struct Handler: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            lines.lines.withLock { $0.append("\(event.level): \(event.message)") }
        }
    }
}

@Suite("LogLimiter")
struct LogLimiterTests {
    private func refuse(_ limiter: LogLimiter, _ count: Int, kind: String = "max_inbound") {
        for index in 0..<count {
            limiter.note(kind, "refused connection \(index): \(kind)") {
                "refused \(LogLimiter.formatted($0)) connections in the last \(LogLimiter.formatted($1)): \(kind)"
            }
        }
    }

    @Test("a burst logs its first line at once and one summary with the count when the interval is over")
    func burstBecomesOneSummary() {
        let lines = Lines()
        let clock = ManualClock()
        let limiter = LogLimiter(logger: lines.logger, interval: .seconds(10), clock: clock)
        refuse(limiter, 4_313)
        #expect(lines.all == ["warning: refused connection 0: max_inbound"])
        limiter.flush()  // the interval is not over yet
        #expect(lines.all.count == 1)
        clock.advance(by: .seconds(10))
        limiter.flush()
        #expect(
            lines.all == [
                "warning: refused connection 0: max_inbound",
                "warning: refused 4,312 connections in the last 10 s: max_inbound",
            ]
        )
        #expect(limiter.totals == ["max_inbound": 4_313])
        // After a quiet interval the next one is logged as a first again.
        refuse(limiter, 1)
        #expect(lines.all.last == "warning: refused connection 0: max_inbound")
    }

    @Test("the next occurrence after the interval writes the summary of the last one and logs itself")
    func summaryOnNextOccurrence() {
        let lines = Lines()
        let clock = ManualClock()
        let limiter = LogLimiter(logger: lines.logger, interval: .seconds(10), clock: clock)
        refuse(limiter, 3)
        clock.advance(by: .seconds(12))
        refuse(limiter, 1)
        #expect(
            lines.all == [
                "warning: refused connection 0: max_inbound",
                "warning: refused 2 connections in the last 12 s: max_inbound",
                "warning: refused connection 0: max_inbound",
            ]
        )
    }

    @Test("a flood of any size over many intervals writes at most two lines per kind per interval")
    func boundedGrowth() {
        let lines = Lines()
        let clock = ManualClock()
        let limiter = LogLimiter(logger: lines.logger, interval: .seconds(10), maximumKinds: 4, clock: clock)
        for _ in 0..<20 {
            for kind in ["a", "b", "c", "d", "e", "f", "g"] { refuse(limiter, 500, kind: kind) }
            clock.advance(by: .seconds(5))
            limiter.flush()
        }
        // 100 s = 10 intervals; 4 kinds tracked apart (the 5th and later fold into "other").
        #expect(lines.all.count <= 2 * (4 + 1) * 11)
        #expect(Set(limiter.totals.keys) == ["a", "b", "c", "d", "other"])
        #expect(limiter.totals.values.reduce(0, +) == 20 * 7 * 500)
    }

    @Test("kinds are limited apart, each at its own level")
    func kindsApart() {
        let lines = Lines()
        let clock = ManualClock()
        let limiter = LogLimiter(logger: lines.logger, clock: clock)
        refuse(limiter, 2, kind: "max_inbound")
        limiter.note("bad_frame", level: .notice, "closing link: bad frame") { count, _ in
            "closed \(count) more: bad_frame"
        }
        limiter.note("bad_frame", level: .notice, "closing link: bad frame") { count, _ in
            "closed \(count) more: bad_frame"
        }
        clock.advance(by: .seconds(10))
        limiter.flush()
        #expect(lines.all.count == 4)
        #expect(lines.all.contains("notice: closed 1 more: bad_frame"))
        #expect(lines.all.contains("warning: refused 1 connections in the last 10 s: max_inbound"))
    }

    @Test(
        "counts and durations format for people",
        arguments: [(0, "0"), (999, "999"), (1_000, "1,000"), (4_312, "4,312"), (1_234_567, "1,234,567")]
    )
    func formatting(count: Int, text: String) {
        #expect(LogLimiter.formatted(count) == text)
        #expect(LogLimiter.formatted(Duration.seconds(10)) == "10 s")
        #expect(LogLimiter.formatted(Duration.milliseconds(2_500)) == "2.5 s")
    }
}
