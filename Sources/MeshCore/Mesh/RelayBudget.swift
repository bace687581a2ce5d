import Synchronization

/// Enforces ``RelayLimits`` on messages relayed for others: an hourly token bucket for
/// the node, one per neighbour for its share, and the battery floor.
final class RelayBudget: Sendable {
    /// Why a message may not be relayed now.
    struct Refusal: Error {
        /// The counter in ``RouterStats/relayRefused``: `budget`, `neighbourShare` or
        /// `batteryLow`.
        var reason: String
        /// What bit, for the log.
        var detail: String
    }

    private struct Bucket {
        var tokens: Double
        var updatedAt: ContinuousClock.Instant

        /// Refills at `capacity` per hour up to `capacity`.
        mutating func refill(capacity: Int, now: ContinuousClock.Instant) {
            let elapsed = now - updatedAt
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(Double(capacity), tokens + seconds * Double(capacity) / 3600)
            updatedAt = now
        }
    }

    private struct State {
        var limits: RelayLimits
        var node: Bucket
        var neighbours: [PeerID: Bucket] = [:]
    }

    /// Neighbour buckets kept at most; full ones (as good as new) are dropped first.
    private static let maxTrackedNeighbours = 4096

    private let clock: any MeshClock
    private let gauge: (any BatteryGauge)?
    private let state: Mutex<State>

    init(limits: RelayLimits, clock: any MeshClock, gauge: (any BatteryGauge)?) {
        self.clock = clock
        self.gauge = gauge
        state = Mutex(State(limits: limits, node: Bucket(tokens: Double(limits.maxPerHour), updatedAt: clock.now)))
    }

    var limits: RelayLimits { state.withLock { $0.limits } }

    /// Changes the limits at run time; spent budget stays spent.
    func set(_ limits: RelayLimits) {
        let now = clock.now
        state.withLock { state in
            state.node.refill(capacity: state.limits.maxPerHour, now: now)
            state.node.tokens = min(state.node.tokens, Double(limits.maxPerHour))
            if state.limits.maxPerHour == 0 { state.node.tokens = Double(limits.maxPerHour) }
            state.limits = limits
            state.neighbours = [:]
        }
    }

    /// Takes one message of the budget for a message from `neighbour`, checking and
    /// spending in one step, so deliveries decided at the same time never share the
    /// last message of a budget. Returns why it may not be relayed now (nothing is
    /// spent then). A reservation whose message is not taken into custody after all is
    /// given back with ``release(from:)``.
    func reserve(from neighbour: PeerID) -> Refusal? {
        let limits = self.limits
        if limits.batteryFloorPercent > 0, let percent = gauge?.dischargingPercent(),
            percent < limits.batteryFloorPercent
        {
            return Refusal(
                reason: "batteryLow",
                detail:
                    "the battery is at \(percent) %, below relay.battery_floor_percent (\(limits.batteryFloorPercent) %)"
            )
        }
        guard let perNeighbour = limits.perNeighbour else { return nil }
        let now = clock.now
        return state.withLock { state in
            state.node.refill(capacity: limits.maxPerHour, now: now)
            if state.node.tokens < 1 {
                return Refusal(reason: "budget", detail: "relay.max_per_hour (\(limits.maxPerHour)) is spent for now")
            }
            var bucket = state.neighbours[neighbour] ?? Bucket(tokens: Double(perNeighbour), updatedAt: now)
            bucket.refill(capacity: perNeighbour, now: now)
            if bucket.tokens < 1 {
                state.neighbours[neighbour] = bucket
                return Refusal(
                    reason: "neighbourShare",
                    detail:
                        "this neighbour used its share (\(perNeighbour) an hour, relay.neighbour_share \(limits.neighbourShare))"
                )
            }
            state.node.tokens -= 1
            bucket.tokens -= 1
            state.neighbours[neighbour] = bucket
            if state.neighbours.count > Self.maxTrackedNeighbours {
                for (peer, var held) in state.neighbours {
                    held.refill(capacity: perNeighbour, now: now)
                    if held.tokens >= Double(perNeighbour) { state.neighbours[peer] = nil }
                }
            }
            return nil
        }
    }

    /// Gives back a message reserved by ``reserve(from:)`` whose message was not taken
    /// into custody (refused later, a chunk of a message still incomplete, a queue
    /// that failed).
    func release(from neighbour: PeerID) {
        let limits = self.limits
        guard let perNeighbour = limits.perNeighbour else { return }
        let now = clock.now
        state.withLock { state in
            state.node.refill(capacity: limits.maxPerHour, now: now)
            state.node.tokens = min(Double(limits.maxPerHour), state.node.tokens + 1)
            guard var bucket = state.neighbours[neighbour] else { return }
            bucket.refill(capacity: perNeighbour, now: now)
            bucket.tokens = min(Double(perNeighbour), bucket.tokens + 1)
            state.neighbours[neighbour] = bucket
        }
    }
}
