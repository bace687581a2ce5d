extension BLETransport {
    /// The executor on which this transport's links do their I/O with the fewest thread
    /// hand-offs: the thread that waits for socket readiness (nil in builds without the
    /// BLE trait).
    ///
    /// A task that calls a BLE link's `receive()` and `send(_:)` in a loop can run with
    /// `withTaskExecutorPreference(BLETransport.linkExecutor) { ... }` (or
    /// `Task(executorPreference:)`): a packet then wakes one thread, where a task on
    /// Swift's global pool needs two (the reactor thread, then a pool thread). Work done
    /// there delays every other BLE descriptor, so keep it short and never block.
    public static var linkExecutor: (any TaskExecutor)? { FDReactor.shared.taskExecutor }
}
