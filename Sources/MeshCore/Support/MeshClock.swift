/// The clock the core reads and sleeps on: ack timeouts, keepalives, dial backoff,
/// handshake deadlines. Injected so that tests (and simulations) can advance time
/// instead of waiting for it.
///
/// Instants are `ContinuousClock.Instant`s, so a test clock can start at the real
/// `now` and move forward from there.
public protocol MeshClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }
    /// Suspends until `deadline`.
    /// - Throws: `CancellationError` when the task is cancelled first.
    func sleep(until deadline: ContinuousClock.Instant) async throws
    /// The wall clock, in milliseconds since 1970 (UTC), or nil when this clock has
    /// none: MeshCore reads no system time itself, so a node's clock supplies it.
    /// Signed topic publication times (docs/PROTOCOL.md §A.7) need it.
    var wallClockMillis: UInt64? { get }
}

extension MeshClock {
    /// No wall clock unless the clock supplies one.
    public var wallClockMillis: UInt64? { nil }

    /// Suspends for `duration`.
    /// - Throws: `CancellationError` when the task is cancelled first.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now + duration)
    }
}

/// The real clock: `ContinuousClock`.
public struct SystemClock: MeshClock {
    /// Creates the system clock.
    public init() {}

    public var now: ContinuousClock.Instant { ContinuousClock.now }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await ContinuousClock().sleep(until: deadline, tolerance: nil)
    }
}

extension MeshClock where Self == SystemClock {
    /// The real clock.
    public static var system: SystemClock { SystemClock() }
}
