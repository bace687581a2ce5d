import MeshCore

/// Polls `condition` every 20 ms until it holds or `attempts` run out (10 s by
/// default): how tests wait for what another task or process does, with a bound
/// instead of a sleep. A condition that throws counts as not holding yet.
///
/// ```swift
/// try await eventually("b has a link to a") { await b.router.peers().contains { $0.peer == a.id } }
/// ```
/// - Throws: ``MeshError`` `.timedOut` naming `what` and where it was awaited when the
///   attempts run out (the test fails with that text), or `CancellationError`.
public func eventually(
    _ what: String,
    attempts: Int = 500,
    fileID: String = #fileID,
    line: Int = #line,
    _ condition: () async throws -> Bool
) async throws {
    for _ in 0..<attempts {
        if (try? await condition()) == true { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw MeshError(
        .timedOut,
        "timed out waiting until \(what) (\(attempts) attempts, 20 ms apart, at \(fileID):\(line))"
    )
}
