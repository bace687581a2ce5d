#if canImport(CBlueZ)
import CBlueZ
import Synchronization

/// The queue of ``FDReactor``'s executor.
struct ExecutorJobs {
    /// Jobs waiting to run on the reactor thread, oldest first.
    var queue: [UnownedJob] = []
    /// The reactor thread is in (or about to enter) a blocking `epoll_wait`: a new job
    /// must signal the wake-up descriptor.
    var sleeping = false
}

/// The reactor thread as a task executor.
///
/// A task that prefers it (`withTaskExecutorPreference(FDReactor.shared)`, or
/// ``BLETransport/linkExecutor``) runs its nonisolated code on the reactor thread: when
/// it waits for a descriptor and the descriptor becomes ready, the reactor resumes it
/// in its own loop (one thread wake-up per packet, as a blocking `read` in C has)
/// instead of handing it to a thread of Swift's global pool (two wake-ups). Code on
/// this executor must not block: it holds up every other descriptor's waiters.
extension FDReactor: TaskExecutor {
    /// Queues `job` to run on the reactor thread; wakes the thread when it sleeps.
    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let wake = jobs.withLock { jobs -> Bool in
            jobs.queue.append(job)
            let wake = jobs.sleeping
            jobs.sleeping = false
            return wake
        }
        ensureThread()
        if wake { cbluez_wakeup_signal(wakeupFD) }
    }

    /// Runs the jobs queued so far (not those they queue: those run after the next
    /// readiness check, so descriptors are served between jobs). `batch` is an empty
    /// array whose storage is reused from call to call.
    func runJobs(_ batch: inout [UnownedJob]) {
        jobs.withLock { swap(&batch, &$0.queue) }
        if batch.isEmpty { return }
        let executor = asUnownedTaskExecutor()
        for job in batch { job.runSynchronously(on: executor) }
        batch.removeAll(keepingCapacity: true)
    }

    /// The reactor thread as an executor (nil in builds without the BLE trait, whose
    /// `poll` reactor is not one).
    package var taskExecutor: (any TaskExecutor)? { self }
}
#endif
