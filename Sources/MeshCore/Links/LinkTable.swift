import Synchronization

/// The authenticated links in use, by ID and by peer, with the duplicate-link
/// tie-break. Read on every send without an actor hop; waiters are woken the moment a
/// link to their peer comes up.
final class LinkTable: Sendable {
    private struct State {
        var sessions: [LinkID: LinkSession] = [:]
        var byPeer: [PeerID: [LinkID]] = [:]
        var waiters: [UInt64: (peer: PeerID, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// What ``register(_:)`` decided.
    enum Registration {
        /// The session is in the table.
        case added
        /// The session is in the table and replaced `old` (close it).
        case replaced(old: LinkSession)
        /// The session lost the tie-break to an existing link (close it).
        case duplicate
    }

    private let localPeerID: PeerID
    private let state = Mutex(State())
    /// The envelope formats peers speak, as their link handshakes announced them.
    let formats = EnvelopeFormats()

    init(localPeerID: PeerID) {
        self.localPeerID = localPeerID
    }

    /// Adds a session, resolving duplicates: one link per peer per transport.
    func register(_ session: LinkSession) -> Registration {
        // The handshake completed, so its capabilities are the peer's own, whichever
        // link the tie-break keeps.
        formats.noteHandshake(with: session.remote, capabilities: session.remoteCapabilities)
        let (outcome, wake): (Registration, [CheckedContinuation<Void, Never>]) = state.withLock { state in
            let peer = session.remote
            var outcome = Registration.added
            if let existingID = state.byPeer[peer, default: []].first(where: {
                state.sessions[$0]?.transport == session.transport
            }),
                let existing = state.sessions[existingID]
            {
                // Same direction: the newer link replaces the older (the remote
                // redialled). Opposite directions: the one dialled by the lower peer ID
                // wins, so both ends keep the same link.
                let keepNew = existing.role == session.role || (session.role == .initiator) == (localPeerID < peer)
                guard keepNew else { return (.duplicate, []) }
                state.sessions[existingID] = nil
                state.byPeer[peer]?.removeAll { $0 == existingID }
                outcome = .replaced(old: existing)
            }
            state.sessions[session.id] = session
            state.byPeer[peer, default: []].append(session.id)
            var wake: [CheckedContinuation<Void, Never>] = []
            for (key, waiter) in state.waiters where waiter.peer == peer {
                state.waiters[key] = nil
                wake.append(waiter.continuation)
            }
            return (outcome, wake)
        }
        for continuation in wake { continuation.resume() }
        return outcome
    }

    /// Removes a session; returns false when it was not in the table.
    @discardableResult
    func remove(_ session: LinkSession) -> Bool {
        state.withLock { state in
            guard state.sessions.removeValue(forKey: session.id) != nil else { return false }
            state.byPeer[session.remote]?.removeAll { $0 == session.id }
            if state.byPeer[session.remote]?.isEmpty == true { state.byPeer[session.remote] = nil }
            return true
        }
    }

    /// The session with this ID, if it is in the table.
    func session(_ id: LinkID) -> LinkSession? {
        state.withLock { $0.sessions[id] }
    }

    /// The open sessions to `peer`.
    func sessions(to peer: PeerID) -> [LinkSession] {
        state.withLock { state in
            (state.byPeer[peer] ?? []).compactMap { state.sessions[$0] }
        }.filter { !$0.isClosed }
    }

    /// Whether a link to `peer` over `transport` is in the table.
    func hasSession(to peer: PeerID, on transport: String) -> Bool {
        state.withLock { state in
            (state.byPeer[peer] ?? []).contains { state.sessions[$0]?.transport == transport }
        }
    }

    /// Every peer with a link, sorted.
    var peers: [PeerID] { state.withLock { $0.byPeer.keys.sorted() } }

    /// Every session.
    var all: [LinkSession] { state.withLock { Array($0.sessions.values) } }

    /// Suspends until a session not in `excluding` is open to `peer`, the clock passes
    /// `deadline`, or the task is cancelled. Returns at once if there is one already.
    func waitForLink(
        to peer: PeerID,
        excluding: Set<LinkID>,
        until deadline: ContinuousClock.Instant,
        clock: any MeshClock
    ) async {
        func ready() -> Bool { sessions(to: peer).contains { !excluding.contains($0.id) } }
        while !Task.isCancelled, clock.now < deadline, !ready() {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.waitForRegistration(of: peer) }
                group.addTask { try? await clock.sleep(until: deadline) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Suspends until the next registration of a link to `peer` (or cancellation).
    private func waitForRegistration(of peer: PeerID) async {
        let key: UInt64 = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let cancelled: Bool = state.withLock { state in
                    if Task.isCancelled { return true }
                    state.waiters[key] = (peer, continuation)
                    return false
                }
                if cancelled { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { $0.waiters.removeValue(forKey: key)?.continuation }
            continuation?.resume()
        }
    }
}
