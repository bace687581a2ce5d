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
    ///
    /// The transport's own links name it as their `Link.preferredTaskExecutor` (unless
    /// `link_executor: pool`), so a node's handshake, reader, ack writer and ticker of
    /// every BLE link run here.
    public static var linkExecutor: (any TaskExecutor)? { FDReactor.shared.taskExecutor }

    /// The executor this transport's links name as ``MeshCore/Link/preferredTaskExecutor``:
    /// ``linkExecutor`` with `link_executor: reactor` (the default), nil with `pool`.
    var linkTaskExecutor: (any TaskExecutor)? {
        configuration.linkExecutor == .reactor ? Self.linkExecutor : nil
    }
}
