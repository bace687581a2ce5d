import Logging
import MeshCore
import ServiceLifecycle

/// The store's periodic upkeep as a `Service`: runs ``MeshStore/maintain(now:)`` once
/// at start and then every `interval`, until cancelled or a graceful shutdown. A failed
/// pass is logged and the next one tried; passes that changed something are logged at
/// `info`.
///
/// ```swift
/// let services: [any Service] = [StoreMaintenance(store: store), routerService, controlServer]
/// ```
public struct StoreMaintenance: Service {
    /// The store kept.
    public let store: MeshStore
    /// Time between two passes.
    public let interval: Duration
    private let clock: any MeshClock
    private let logger: Logger

    /// Creates the service.
    /// - Parameters:
    ///   - store: the store to keep.
    ///   - interval: time between two passes (5 minutes by default).
    ///   - clock: the clock the service sleeps on; tests pass a manual one.
    ///   - logger: where passes and failures are reported.
    public init(
        store: MeshStore,
        interval: Duration = .seconds(300),
        clock: any MeshClock = SystemClock(),
        logger: Logger = Logger(label: "scmesh.store")
    ) {
        self.store = store
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// Runs passes until the task is cancelled or the service group shuts down; then
    /// returns normally.
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { [self] in
                while !Task.isCancelled {
                    await pass()
                    try await clock.sleep(for: interval)
                }
            }
        } catch is CancellationError {
            return
        }
    }

    private func pass() async {
        do {
            let report = try await store.maintain()
            if !report.expired.isEmpty || report.dedupPruned > 0 || report.historyPruned > 0 {
                logger.info(
                    "store maintenance: \(report.expired.count) messages expired, \(report.dedupPruned) old message IDs forgotten, \(report.historyPruned) history entries deleted"
                )
            }
        } catch {
            logger.error("store maintenance failed (next try in \(interval)): \(error)")
        }
    }
}
