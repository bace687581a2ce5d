import Synchronization

/// The sequences of a node's own route announcements that outlive a restart
/// (docs/PROTOCOL.md §A.5, "Restarting").
public struct AnnounceState: Sendable, Hashable {
    /// The sequence of the latest announcement made without the solicited flag: what
    /// the rest of the mesh holds of this node, and what a restarted node repeats.
    public var unsolicited: UInt64
    /// The highest sequence announced at all (a solicited one may be above
    /// ``unsolicited``): new announcements after a restart count on from above it.
    public var latest: UInt64

    /// Creates a state; `latest` below `unsolicited` is taken as `unsolicited`.
    public init(unsolicited: UInt64, latest: UInt64) {
        self.unsolicited = unsolicited
        self.latest = max(latest, unsolicited)
    }
}

/// Keeps a node's ``AnnounceState`` across restarts. With one, a restarted router's
/// first announcement repeats the sequence the mesh already holds of it (the same
/// signed bytes) instead of a new sequence that crosses every link of the mesh. The
/// node passes its store's (MeshStore's `AnnounceStateLog`); the simulator keeps one
/// per node in memory.
public protocol AnnounceStateStore: Sendable {
    /// The state saved last; nil when none was (a first start), or when it cannot be
    /// read (the router then announces a new sequence, as without a store).
    func load() async -> AnnounceState?
    /// Saves `state`, replacing the one saved before. A failure is the store's to log:
    /// it costs a new sequence at the next restart, nothing else.
    func save(_ state: AnnounceState) async
}

/// An ``AnnounceStateStore`` in memory: it outlives a router, not the process (the
/// simulator's restarts, tests).
public final class InMemoryAnnounceStateStore: AnnounceStateStore {
    private let state: Mutex<AnnounceState?>

    /// A store holding `state` (nil: nothing saved yet).
    public init(_ state: AnnounceState? = nil) {
        self.state = Mutex(state)
    }

    /// The state saved last.
    public func load() async -> AnnounceState? { state.withLock { $0 } }

    /// Replaces the state.
    public func save(_ state: AnnounceState) async { self.state.withLock { $0 = state } }

    /// The state saved last, read without waiting.
    public var saved: AnnounceState? { state.withLock { $0 } }
}
