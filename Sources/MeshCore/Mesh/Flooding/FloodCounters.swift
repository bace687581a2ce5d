/// The flooding fallback's counters (part of ``RouterStats``).
public struct FloodCounters: Sendable, Hashable, Codable {
    /// Floods this node started (its own messages and receipts with no route, relayed
    /// messages whose route failed, emergencies).
    public var started = 0
    /// Flood copies taken into custody from a neighbour.
    public var accepted = 0
    /// Copies handed to neighbours (one per neighbour a flood was sent to): the cost of
    /// flooding in transmissions.
    public var transmissions = 0
    /// Re-broadcasts suppressed because enough neighbours offered the copy already.
    public var suppressed = 0
    /// Re-broadcasts not needed because every neighbour had offered the copy already.
    public var covered = 0
    /// Flood copies acknowledged as duplicates (already seen, or already held).
    public var duplicates = 0
    /// Flood copies acknowledged and dropped because their TTL was used up.
    public var ttlExhausted = 0
    /// Emergency messages sent by this node.
    public var emergencySent = 0
    /// Emergency messages refused by a rate limit, by reason: `ownLimit` (this node's
    /// own sends, `flood.emergency_per_hour`), `emergencyOrigin` (a relayed origin's),
    /// `emergencyNeighbour` (one neighbour's, `flood.emergency_per_neighbour_per_hour`).
    public var emergencyRateLimited: [String: Int] = [:]

    /// Zero counters.
    public init() {}
}
