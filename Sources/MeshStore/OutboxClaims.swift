import Synchronization

/// The outbox's claims: the messages being sent right now, kept in memory only. A claim
/// costs no write: it ends with the status update that records its attempt (after that
/// update committed), or with the process, and a message claimed when the node died is
/// simply queued at the next open.
final class OutboxClaims: Sendable {
    /// One claim: its attempt number and when it was taken (written with the update
    /// that ends it).
    struct Claim: Sendable {
        var attempt: Int
        var at: Int64
    }

    /// Claims by message ID (hex); nil while the claim is reserved and its row is
    /// being read.
    private let claims = Mutex<[String: Claim?]>([:])

    /// Reserves `id` for a claim; false when someone else holds it.
    func reserve(_ id: String) -> Bool {
        claims.withLock { claims in
            guard claims[id] == nil else { return false }
            claims[id] = .some(nil)
            return true
        }
    }

    /// Completes a reserved claim with its attempt.
    func confirm(_ id: String, _ claim: Claim) {
        claims.withLock { $0[id] = .some(claim) }
    }

    /// Ends a claim.
    func release(_ id: String) {
        claims.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// The claim on `id`, when it holds one that is confirmed.
    func claim(_ id: String) -> Claim? {
        claims.withLock { $0[id] ?? nil }
    }

    /// The IDs claimed or reserved now.
    var held: Set<String> {
        claims.withLock { Set($0.keys) }
    }
}
