import Glibc
import MeshCore

/// Runs `body` — a blocking call: a socket read or write, a child process's output read
/// to its end, `waitUntilExit()` — on a thread of its own, and waits for it without
/// holding a thread of Swift's cooperative pool.
///
/// That pool has one thread per core. A test that blocks one of them (two cores: half of
/// them) while it waits for a node, transport or HTTP server running in the same process
/// starves that very server, and every test running beside it; two such waits at once
/// deadlock the whole test run. Tests wait for blocking calls through this.
///
/// ```swift
/// let reply = try await onOwnThread { try socket.readUntilClosed(timeoutSeconds: 30) }
/// ```
/// - Throws: what `body` throws, or ``MeshError`` `.invalidArgument` when no thread can
///   be started (the system's thread limit).
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let work = Unmanaged.passRetained(OwnThreadWork { continuation.resume(with: Result { try body() }) })
        var thread = pthread_t()
        let created = pthread_create(
            &thread,
            nil,
            { context in
                guard let context else { return nil }
                Unmanaged<OwnThreadWork>.fromOpaque(context).takeRetainedValue().run()
                return nil
            },
            work.toOpaque()
        )
        if created == 0 {
            pthread_detach(thread)
        } else {
            work.release()
            continuation.resume(
                throwing: MeshError(
                    .invalidArgument,
                    "cannot start a thread for a blocking call (pthread_create: error \(created))"
                )
            )
        }
    }
}

/// The closure a thread started by ``onOwnThread(_:)`` runs.
private final class OwnThreadWork: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
