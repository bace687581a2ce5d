import Logging
import ServiceLifecycle
import Synchronization

// What the router shows (events, stats, peers, routes) and the run-time controls.
extension Router {
    /// A new stream of router events. Each subscriber gets its own stream; a slow one
    /// loses its oldest events (never slows the router).
    public func events() async -> AsyncStream<RouterEvent> {
        bus.subscribe()
    }

    /// The router's counters.
    public func stats() async -> RouterStats { counters.snapshot(open: table.all) }

    /// Every peer with a live link, with its links best first.
    public func peers() async -> [PeerSnapshot] {
        table.peers.map { peer in
            let live = table.sessions(to: peer)
            let order = policy.rank(live.map(\.candidate), payloadSize: 0).map(\.linkID)
            let snapshots = order.compactMap { id in live.first { $0.id == id }?.snapshot }
            return PeerSnapshot(
                peer: peer,
                links: snapshots,
                activeTransport: paths.activeTransport(to: peer),
                wireVersion: snapshots.first?.wireVersion ?? Int(Frame.version),
                capabilities: snapshots.first?.capabilities ?? []
            )
        }
    }

    /// Every configured transport and its state.
    public func transportStatus() async -> [TransportStatus] {
        await links.transportStatus
    }

    /// What this router holds about `target`'s routes and its asks for one, in one line
    /// (the simulator explains held messages with it); `name` names peers.
    package func routeDiagnosis(for target: PeerID, name: @Sendable (PeerID) -> String) -> String {
        announcer.routeDiagnosis(for: target, name: name)
    }

    /// Every destination this node can reach now: direct links (1 hop) and routes
    /// learned from announcements (next hop, hops, age, transport), by destination.
    public func routes() async -> [RouteSnapshot] {
        let policy = self.policy
        return routeTable.snapshot(now: clock.now) { sessions in
            let order = policy.rank(sessions.map(\.candidate), payloadSize: 0)
            return order.first.flatMap { best in sessions.first { $0.id == best.linkID } }
        }
    }

    /// Whether this node relays, sends and receives (`relay.enabled`).
    public var relayEnabled: Bool { relay.isEnabled }

    /// Switches relaying (and with it sending and receiving: relay = messaging) on or
    /// off while the router runs. Off: sends throw `.relayDisabled`, every DATA frame
    /// is refused (senders keep their messages queued) and this node stops
    /// announcing. On again: the node announces itself and its routes, and waiting
    /// messages flow.
    public func setRelayEnabled(_ enabled: Bool) {
        let was = relay.set(enabled)
        if enabled && !was { announcer.relayResumed() }
        if enabled != was { gossip.relaySwitched() }
    }

    /// Sets the name this node claims in the handshake of every link from now on
    /// (docs/PROTOCOL.md §B.2.1): `name` as ``PeerNames/announceable(_:)`` makes it
    /// (cut to 64 UTF-8 bytes), or none when nil or not a valid name. Links already up
    /// keep what they were told.
    public func setAnnouncedName(_ name: String?) {
        let announceable = PeerNames.announceable(name)
        links.announcedName.withLock { $0 = announceable }
    }

    /// The name this node claims in its handshakes, if any.
    public var announcedName: String? { links.announcedName.withLock { $0 } }

    /// The name `peer` claimed for itself in its last handshake with this node: a
    /// self-chosen, non-unique claim (see ``PeerNames``); nil when it claimed none.
    public func heardName(of peer: PeerID) -> String? {
        links.peerNames.name(of: peer)
    }

    /// Every peer's claimed name from its last handshake with this node.
    public func heardNames() -> [PeerID: String] {
        links.peerNames.all
    }

    /// Adds names heard in an earlier run (kept by the node's store) for peers not
    /// heard from in this one; see ``PeerNames/restore(_:)``.
    public func restoreHeardNames(_ names: [PeerID: String]) {
        links.peerNames.restore(names)
    }

    /// The relay's budgets now in force.
    public func relayLimits() -> RelayLimits {
        delivery.relayBudget.limits
    }

    /// Changes the relay's budgets at run time (the HTTP API's settings); what was spent
    /// this hour stays spent.
    public func setRelayLimits(_ limits: RelayLimits) {
        delivery.relayBudget.set(limits)
    }

    /// Asks the router to keep a link to `hint` (as if discovery had reported it).
    /// - Parameter maxFailures: give up after this many failed dials in a row, spanning
    ///   at least ``requestedDialPersistence`` (for
    ///   addresses someone else gave: an invitation, the address ledger); nil dials
    ///   until the hint is lost.
    public func connect(to hint: PeerHint, maxFailures: Int? = nil) async {
        await links.connect(to: hint, maxFailures: maxFailures)
    }

    /// Failed dials in a row after which an address someone else gave (an invitation,
    /// an address record, the address ledger) is dropped, once they also span
    /// ``requestedDialPersistence``.
    public static let requestedDialFailureLimit = 8

    /// How long an address someone else gave keeps being dialled while it fails: a
    /// known peer that restarts or loses power for a few minutes is found again
    /// without waiting for its own dial.
    public static let requestedDialPersistence = Duration.seconds(600)

    /// Stops dialling the hints that name `peer` (a removed contact).
    public func forget(peer: PeerID) async {
        await links.forget(peer: peer)
    }
}
