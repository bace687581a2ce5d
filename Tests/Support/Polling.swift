/// A bounded wait ran out.
public struct TimedOut: Error, CustomStringConvertible {
    /// What the test waited for.
    public var what: String
    /// Creates the error.
    public init(what: String) { self.what = what }
    public var description: String { "timed out waiting for \(what)" }
}

/// How long ``within(seconds:_:_:)`` and ``eventuallyValue(_:seconds:_:)`` wait by default: a
/// bound on a hang, not a speed limit. Generous, because `swift test` runs every suite
/// at once on two cores, where tests that take milliseconds can take tens of seconds.
public let hangGuardSeconds: Double = 90

/// Polls `check` every 5 ms until it returns a value, for at most `seconds`.
/// - Throws: ``TimedOut`` naming `what`; what `check` throws.
public func eventuallyValue<T>(
    _ what: String,
    seconds: Double = hangGuardSeconds,
    _ check: () throws -> T?
) async throws -> T {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if let value = try check() { return value }
        try await Task.sleep(for: .milliseconds(5))
    }
    throw TimedOut(what: what)
}

/// Polls `condition` every 5 ms until it holds, for at most `seconds`.
/// - Throws: ``TimedOut`` naming `what`; what `condition` throws.
public func waitUntil(
    _ what: String,
    seconds: Double = hangGuardSeconds,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(5))
    }
    throw TimedOut(what: what)
}

/// Runs `body` with a deadline, so that a broken contract fails the test instead of
/// hanging it.
/// - Throws: ``TimedOut`` naming `what` when `seconds` pass first; what `body` throws.
public func within<T: Sendable>(
    seconds: Double = hangGuardSeconds,
    _ what: String,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TimedOut(what: what)
        }
        return value
    }
}
