import Synchronization

/// The keepalive interval every link of a router reads at each tick: the configured
/// `keepalive_interval_ms`, or the longer one a power profile set
/// (``TransportPacing/keepaliveInterval``).
final class KeepaliveSetting: Sendable {
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
