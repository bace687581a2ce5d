import Logging
import Synchronization

/// The route table kept across restarts (docs/PROTOCOL.md §A.5, "Restarting"): taken
/// back before any link comes up, saved every ``tableSaveInterval`` and when the
/// router stops. A node killed without a stop loses at most the changes of one
/// interval, which the summaries of its first links repair.
extension Announcer {
    /// How often the table is saved while the router runs.
    static let tableSaveInterval: Duration = .seconds(300)

    /// Takes back the table the store kept (before any link is up).
    func restoreTable() async {
        guard isActive, let tableStore else { return }
        let saved = await tableStore.load()
        guard !saved.isEmpty else { return }
        let taken = routes.restore(saved, now: clock.now)
        logger.debug(
            "route table: \(taken) of \(saved.count) saved entries taken back, dormant until their neighbours link"
        )
        // The neighbours of the saved table compared routes with this node before it
        // stopped: no hop counts to them (docs/PROTOCOL.md §A.5, "Route summaries",
        // *Hop counts*).
        let neighbours = Set(saved.lazy.flatMap { $0.advertisements.map(\.neighbour) })
        summaryTimers.withLock { timers in
            for neighbour in neighbours { timers.hopsNotNeeded(by: neighbour) }
        }
    }

    /// Saves the table every ``tableSaveInterval`` until the task is cancelled.
    func runTableSaves() async {
        guard isActive, tableStore != nil else { return }
        while !Task.isCancelled {
            do { try await clock.sleep(for: Self.tableSaveInterval) } catch { return }
            await saveTable()
        }
    }

    /// Saves the table once more as the router stops.
    func saveTableAtStop() async {
        guard isActive else { return }
        await saveTable()
    }

    /// Writes the table's current entries to the store. It runs in a task of its own:
    /// the caller's may be cancelled (the router stopping), and a store may refuse work
    /// in a cancelled task.
    private func saveTable() async {
        guard let tableStore else { return }
        let entries = routes.saved(now: clock.now)
        await Task { await tableStore.save(entries) }.value
    }
}
