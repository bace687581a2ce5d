import GRDB
import MeshCore
import Synchronization

/// The store's one writer: writes submitted while a commit is under way wait in a
/// queue, and the next pass runs all of them in one transaction, so they share one
/// commit and one fsync (group commit, as databases do). A write that throws is
/// rolled back alone and fails alone; the others still commit. A write's caller hears
/// back only after the commit that made it durable (or the error that undid it).
final class GroupCommit: Sendable {
    /// One submitted write.
    struct Job: Sendable {
        /// Runs the updates in the batch's transaction; returns what to call once the
        /// transaction committed (hand the result to the caller).
        let perform: @Sendable (Database) throws -> @Sendable () -> Void
        /// Tells the caller why its updates were not committed.
        let fail: @Sendable (any Error) -> Void
    }

    private struct State {
        var jobs: [Job] = []
        /// A pass is queued on, or running on, the writer connection.
        var draining = false
    }

    /// Writes in one transaction at most: a bound on the time one commit holds the
    /// writer and on how long the first write of a batch waits for the last.
    static let maxBatch = 512

    private let pool: DatabasePool
    private let state = Mutex(State())
    private let batches = Atomic<Int>(0)
    private let committedJobs = Atomic<Int>(0)

    init(pool: DatabasePool) {
        self.pool = pool
    }

    /// Transactions committed so far, and the writes they carried (for tests and
    /// benchmarks: writes / transactions is how much the commits were shared).
    var counts: (transactions: Int, writes: Int) {
        (batches.load(ordering: .relaxed), committedJobs.load(ordering: .relaxed))
    }

    /// Writes waiting for the next pass.
    var waiting: Int { state.withLock { $0.jobs.count } }

    /// Queues `job`; starts a pass on the writer connection unless one is queued.
    func submit(_ job: Job) {
        let start = state.withLock { state -> Bool in
            state.jobs.append(job)
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if start { schedulePass() }
    }

    private func schedulePass() {
        pool.asyncWriteWithoutTransaction { db in
            self.pass(db)
        }
    }

    /// Commits what is queued now (up to ``maxBatch`` writes) in one transaction, then
    /// schedules the next pass when more arrived meanwhile.
    private func pass(_ db: Database) {
        let batch: [Job] = state.withLock { state in
            let count = min(state.jobs.count, Self.maxBatch)
            let taken = Array(state.jobs.prefix(count))
            state.jobs.removeFirst(count)
            return taken
        }
        commit(batch, db)
        let again = state.withLock { state -> Bool in
            if state.jobs.isEmpty {
                state.draining = false
                return false
            }
            return true
        }
        if again { schedulePass() }
    }

    /// Commits `batch` in one transaction. The writes run one after another without
    /// savepoints (a savepoint costs two statements compiled per write); when one
    /// throws, it fails alone, the transaction is rolled back, and the others run
    /// again each in a savepoint of its own (``commitInSavepoints(_:_:)``).
    private func commit(_ batch: [Job], _ db: Database) {
        guard !batch.isEmpty else { return }
        var finishers: [@Sendable () -> Void] = []
        finishers.reserveCapacity(batch.count)
        var thrower: (index: Int, error: any Error)?
        do {
            try db.inTransaction(.immediate) {
                for (index, job) in batch.enumerated() {
                    do {
                        finishers.append(try job.perform(db))
                    } catch {
                        thrower = (index, error)
                        throw error
                    }
                }
                return .commit
            }
        } catch {
            guard let thrower else {
                // The transaction itself failed: nothing of this batch is committed.
                for job in batch { job.fail(error) }
                return
            }
            batch[thrower.index].fail(thrower.error)
            var rest = batch
            rest.remove(at: thrower.index)
            commitInSavepoints(rest, db)
            return
        }
        batches.add(1, ordering: .relaxed)
        committedJobs.add(batch.count, ordering: .relaxed)
        for finish in finishers { finish() }
    }

    /// Commits `batch` in one transaction, each write in a savepoint: one that throws
    /// is rolled back alone and fails alone; the others commit.
    private func commitInSavepoints(_ batch: [Job], _ db: Database) {
        guard !batch.isEmpty else { return }
        var finishers: [(@Sendable () -> Void)?] = Array(repeating: nil, count: batch.count)
        var failed = Array(repeating: false, count: batch.count)
        do {
            try db.inTransaction(.immediate) {
                for (index, job) in batch.enumerated() {
                    do {
                        try db.inSavepoint {
                            finishers[index] = try job.perform(db)
                            return .commit
                        }
                    } catch {
                        failed[index] = true
                        job.fail(error)
                    }
                }
                return .commit
            }
        } catch {
            // Nothing of this batch is committed: every write not failed yet fails now.
            for (index, job) in batch.enumerated() where !failed[index] { job.fail(error) }
            return
        }
        batches.add(1, ordering: .relaxed)
        committedJobs.add(batch.count - failed.count(where: { $0 }), ordering: .relaxed)
        for finish in finishers { finish?() }
    }
}
