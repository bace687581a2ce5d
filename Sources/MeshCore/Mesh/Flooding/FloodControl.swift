import DequeModule
import Synchronization

/// The flooding state of one router (docs/PROTOCOL.md §A.9–A.10): the duplicate
/// cache, which neighbours offered each flood (for suppression and to skip them when
/// re-broadcasting), the random re-broadcast delay, and the emergency rate limits.
final class FloodControl: Sendable {
    /// An hourly token bucket, refilled continuously.
    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant

        mutating func refill(perHour: Int, now: ContinuousClock.Instant) {
            let elapsed = now - updatedAt
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(Double(perHour), tokens + seconds * Double(perHour) / 3600)
            updatedAt = now
        }
    }

    private struct State {
        var offered: [MessageID: Set<PeerID>] = [:]
        var offeredOrder = Deque<MessageID>()
        var origins: [PeerID: Bucket] = [:]
        var neighbours: [PeerID: Bucket] = [:]
        /// Messages that could not be flooded for want of any neighbour: tried again
        /// when a link comes up.
        var waiting: [MessageID: PeerID] = [:]
        /// Flood copies that also carry a hop's custody (an ordinary copy of the same
        /// message was acknowledged as a duplicate of them): never released without
        /// being handed on.
        /// Each with the TTL that custody came with (the ordinary copy's TTL − 1).
        var custody: [MessageID: UInt8] = [:]
        /// Flood copies being released (handed on by the flood rules, without custody):
        /// a custody offer for one of them now is refused, and made again once the
        /// release is recorded.
        var releasing = Set<MessageID>()
    }

    /// Buckets and offer sets kept at most (full buckets are dropped first).
    private static let maxTracked = 4096

    let configuration: FloodConfiguration
    let seen: any FloodSeenStore
    private let random: any MeshRandom
    private let clock: any MeshClock
    private let state = Mutex(State())

    init(configuration: FloodConfiguration, seen: any FloodSeenStore, random: any MeshRandom, clock: any MeshClock) {
        self.configuration = configuration
        self.seen = seen
        self.random = random
        self.clock = clock
    }

    /// Notes that `neighbour` offered flood `id`; returns how many distinct neighbours
    /// have offered it so far.
    @discardableResult
    func noteOffered(_ id: MessageID, by neighbour: PeerID) -> Int {
        state.withLock { state in
            if state.offered[id] == nil {
                state.offeredOrder.append(id)
                while state.offeredOrder.count > Self.maxTracked * 4, let oldest = state.offeredOrder.popFirst() {
                    state.offered[oldest] = nil
                }
            }
            state.offered[id, default: []].insert(neighbour)
            return state.offered[id]?.count ?? 0
        }
    }

    /// The neighbours that offered flood `id` (they hold it: no need to send it back).
    func offered(_ id: MessageID) -> Set<PeerID> {
        state.withLock { $0.offered[id] ?? [] }
    }

    /// Whether a relay should suppress its re-broadcast of `id`: enough neighbours
    /// offered it already.
    func shouldSuppress(_ id: MessageID) -> Bool {
        configuration.suppressAfter > 0 && offered(id).count >= configuration.suppressAfter
    }

    /// The re-broadcast delay: uniform in [0, `max_delay_ms`].
    func delay() -> Duration {
        configuration.maxDelay * random.unit()
    }

    /// Whether `origin` may send an emergency message now, without spending: nil, or
    /// the reason ``admitEmergency(origin:neighbour:)`` would refuse it.
    func emergencyRefusal(origin: PeerID) -> String? {
        let now = clock.now
        let perOrigin = configuration.emergencyPerHour
        return state.withLock { state in
            Self.originBucket(state, origin, perHour: perOrigin, now: now).tokens < 1 ? "emergencyOrigin" : nil
        }
    }

    /// `origin`'s emergency bucket as of `now` (full for an origin not seen yet).
    private static func originBucket(
        _ state: State,
        _ origin: PeerID,
        perHour: Int,
        now: ContinuousClock.Instant
    ) -> Bucket {
        var bucket = state.origins[origin] ?? Bucket(tokens: Double(perHour), updatedAt: now)
        bucket.refill(perHour: perHour, now: now)
        return bucket
    }

    /// Admits one emergency message relayed from `neighbour` for `origin`, spending
    /// from both buckets; returns the refusal reason (`emergencyOrigin`,
    /// `emergencyNeighbour`) when one is empty.
    func admitEmergency(origin: PeerID, neighbour: PeerID?) -> String? {
        let now = clock.now
        let perOrigin = configuration.emergencyPerHour
        let perNeighbour = configuration.emergencyPerNeighbourPerHour
        return state.withLock { state in
            var originBucket = Self.originBucket(state, origin, perHour: perOrigin, now: now)
            var neighbourBucket: Bucket?
            if let neighbour {
                var bucket = state.neighbours[neighbour] ?? Bucket(tokens: Double(perNeighbour), updatedAt: now)
                bucket.refill(perHour: perNeighbour, now: now)
                neighbourBucket = bucket
                if bucket.tokens < 1 {
                    state.neighbours[neighbour] = bucket
                    return "emergencyNeighbour"
                }
            }
            if originBucket.tokens < 1 {
                state.origins[origin] = originBucket
                return "emergencyOrigin"
            }
            originBucket.tokens -= 1
            state.origins[origin] = originBucket
            if let neighbour, var bucket = neighbourBucket {
                bucket.tokens -= 1
                state.neighbours[neighbour] = bucket
            }
            Self.trim(&state.origins, perHour: perOrigin, now: now)
            Self.trim(&state.neighbours, perHour: perNeighbour, now: now)
            return nil
        }
    }

    private static func trim(_ buckets: inout [PeerID: Bucket], perHour: Int, now: ContinuousClock.Instant) {
        guard buckets.count > maxTracked else { return }
        for (peer, var bucket) in buckets {
            bucket.refill(perHour: perHour, now: now)
            if bucket.tokens >= Double(perHour) { buckets[peer] = nil }
        }
    }

    /// Notes that this node's flood copy of `id` now carries a hop's custody, which
    /// came with an ordinary copy that goes on with `ttl` (its TTL − 1; the highest
    /// when several came).
    /// - Returns: false when that copy is being released right now (its flood relay
    ///   let go of it; ``beginRelease(_:)``), or too many are tracked: the offered copy
    ///   is then refused, so its sender keeps it and offers it again.
    func noteCustody(_ id: MessageID, ttl: UInt8) -> Bool {
        state.withLock { state in
            guard !state.releasing.contains(id), state.custody.count < Self.maxTracked * 16 else { return false }
            state.custody[id] = max(ttl, state.custody[id] ?? 0)
            return true
        }
    }

    /// Takes the custody note of `id`: the TTL the custody came with when its flood
    /// copy carries a hop's custody (it is now to be kept like a flood this node
    /// started, and goes on by route with at least that TTL, not with what is left of
    /// the flood's: docs/PROTOCOL.md §A.9), nil when it carries none.
    func takeCustody(_ id: MessageID) -> UInt8? {
        state.withLock { $0.custody.removeValue(forKey: id) }
    }

    /// What ``beginRelease(_:)`` found.
    enum Release: Equatable {
        /// The release began: custody offers for the copy are refused until it ends.
        case begun
        /// The copy carries a hop's custody, which came with this TTL: it is kept like
        /// a flood this node started, not released.
        case custody(ttl: UInt8)
    }

    /// Starts releasing this node's flood copy of `id` without keeping it, unless it
    /// carries a hop's custody (then it is kept like a flood this node started). From
    /// now until ``endRelease(_:)`` custody offers for `id` are refused, so none is
    /// acknowledged into a copy that is let go.
    func beginRelease(_ id: MessageID) -> Release {
        state.withLock { state in
            if let ttl = state.custody.removeValue(forKey: id) { return .custody(ttl: ttl) }
            state.releasing.insert(id)
            return .begun
        }
    }

    /// Ends a release begun by ``beginRelease(_:)`` (its final status is recorded).
    func endRelease(_ id: MessageID) {
        _ = state.withLock { $0.releasing.remove(id) }
    }

    /// Remembers a message that found no neighbour to flood to.
    func noteWaiting(_ id: MessageID, for destination: PeerID) {
        state.withLock { state in
            guard state.waiting.count < Self.maxTracked * 16 else { return }
            state.waiting[id] = destination
        }
    }

    /// The messages that found no neighbour, forgotten here (a link just came up).
    func takeWaiting() -> [(MessageID, PeerID)] {
        state.withLock { state in
            defer { state.waiting = [:] }
            return state.waiting.map { ($0.key, $0.value) }
        }
    }
}
