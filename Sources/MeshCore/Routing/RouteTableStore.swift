import Synchronization

/// One origin's entry of a route table as kept across a restart (docs/PROTOCOL.md §A.5,
/// "Restarting"): the highest sequence held, the feasibility distance and every
/// neighbour's advertisement, each with its age when saved.
public struct SavedRouteEntry: Sendable, Hashable {
    /// One neighbour's latest advertisement of the origin.
    public struct Advertisement: Sendable, Hashable {
        /// The neighbour it came from (the next hop).
        public var neighbour: PeerID
        /// Its hop count, as received.
        public var hops: UInt8
        /// Its sequence.
        public var sequence: UInt64
        /// The origin's signature over the sequence (so it can be passed on again).
        public var signature: [UInt8]
        /// The transport it arrived over.
        public var transport: String
        /// How long before the save it was last confirmed.
        public var age: Duration

        /// Creates an advertisement.
        public init(
            neighbour: PeerID,
            hops: UInt8,
            sequence: UInt64,
            signature: [UInt8],
            transport: String,
            age: Duration
        ) {
            self.neighbour = neighbour
            self.hops = hops
            self.sequence = sequence
            self.signature = signature
            self.transport = transport
            self.age = age
        }
    }

    /// The origin the entry is about.
    public var origin: PeerID
    /// The highest sequence of the origin accepted.
    public var highest: UInt64
    /// How long before the save ``highest`` was accepted.
    public var age: Duration
    /// The highest sequence taken from an announcement without the solicited flag (what
    /// route summaries list); nil when only solicited ones were.
    public var summarised: UInt64?
    /// The feasibility distance at ``highest`` (255: none yet).
    public var feasibilityDistance: UInt8
    /// Every neighbour's latest advertisement.
    public var advertisements: [Advertisement]

    /// Creates an entry.
    public init(
        origin: PeerID,
        highest: UInt64,
        age: Duration,
        summarised: UInt64?,
        feasibilityDistance: UInt8,
        advertisements: [Advertisement]
    ) {
        self.origin = origin
        self.highest = highest
        self.age = age
        self.summarised = summarised
        self.feasibilityDistance = feasibilityDistance
        self.advertisements = advertisements
    }

    /// The entry as it is `elapsed` later: every age grown by it (the time a node was
    /// down, for a store that knows it).
    public func aged(by elapsed: Duration) -> SavedRouteEntry {
        var entry = self
        entry.age += elapsed
        for index in entry.advertisements.indices { entry.advertisements[index].age += elapsed }
        return entry
    }
}

/// Keeps a node's route table across restarts. With one, a restarted router starts with
/// the routes it had, dormant until a link to their neighbour comes back (as after a
/// link flap), instead of an empty table that every neighbour refills with every route
/// it knows. The node passes its store's (MeshStore's `RouteTableLog`); the
/// simulator keeps one per node in memory.
public protocol RouteTableStore: Sendable {
    /// The entries saved last, each aged by the time since the save where the store
    /// knows it; empty when none were saved, or when they cannot be read (the router
    /// then starts with an empty table, as without a store).
    func load() async -> [SavedRouteEntry]
    /// Saves `entries`, replacing those saved before. A failure is the store's to log:
    /// it costs the neighbours' refill at the next restart, nothing else.
    func save(_ entries: [SavedRouteEntry]) async
}

/// A ``RouteTableStore`` in memory: it outlives a router, not the process (the
/// simulator's restarts, tests). Entries are aged on `clock` by the time between save
/// and load.
public final class InMemoryRouteTableStore: RouteTableStore {
    private let clock: any MeshClock
    private let saved = Mutex<(entries: [SavedRouteEntry], at: ContinuousClock.Instant)?>(nil)

    /// An empty store whose ages run on `clock`.
    public init(clock: any MeshClock) {
        self.clock = clock
    }

    /// The entries saved last, aged by the time since.
    public func load() async -> [SavedRouteEntry] {
        guard let saved = saved.withLock({ $0 }) else { return [] }
        let elapsed = clock.now - saved.at
        return saved.entries.map { $0.aged(by: elapsed) }
    }

    /// Replaces the entries.
    public func save(_ entries: [SavedRouteEntry]) async {
        let now = clock.now
        saved.withLock { $0 = (entries, now) }
    }

    /// How many entries were saved last (nil: none yet), read without waiting.
    public var savedCount: Int? { saved.withLock { $0?.entries.count } }
}
