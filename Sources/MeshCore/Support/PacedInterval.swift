import Synchronization

/// An interval a timer reads each time it waits: the configured one, or the longer one
/// a power profile set (``TransportPacing``). The links read the keepalive from one,
/// the announcer its route summaries' base interval.
final class PacedInterval: Sendable {
    /// The configured interval, the shortest this setting holds.
    let configured: Duration
    private let current: Atomic<Int64>

    init(configured: Duration) {
        self.configured = configured
        current = Atomic(Self.nanoseconds(configured))
    }

    /// The interval in force.
    var interval: Duration { .nanoseconds(current.load(ordering: .relaxed)) }

    /// Sets the interval: `requested`, never below the configured one; nil goes back to it.
    func set(_ requested: Duration?) {
        current.store(Self.nanoseconds(max(requested ?? configured, configured)), ordering: .relaxed)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
