import Logging
import Synchronization

/// Route announcements: originates this node's own (periodically, and when a link
/// comes up), checks the ones neighbours send, keeps the ``RouteTable`` and passes
/// better routes on to the other neighbours, one hop further. Needs the node's
/// identity signer (a ``ReceiptSigner``); without one the router neither announces nor
/// learns routes, and reaches only its direct neighbours.
final class Announcer: Sendable {
    let localPeerID: PeerID
    let configuration: RoutingConfiguration
    let signer: (any ReceiptSigner)?
    let routes: RouteTable
    let links: LinkTable
    let relay: RelaySwitch
    let clock: any MeshClock
    let stats: StatsRecorder
    let bus: EventBus
    let logger: Logger
    /// Called with each destination whose route became usable or changed next hop.
    private let routeLearned = PeerCallback()
    private let sequence: Mutex<UInt64>
    /// This node's latest own announcements.
    private struct Own {
        /// The latest, as made (without the solicited flag).
        var frame: AnnounceFrame?
        /// The latest made without the solicited flag (the periodic one, or the first):
        /// what the rest of the mesh is given, so what its route summaries list for
        /// itself and what a new neighbour is sent (docs/PROTOCOL.md §A.5, "Route
        /// summaries").
        var unsolicited: AnnounceFrame?
    }

    private let latest = Mutex(Own())
    /// Route requests: the routes wanted, the requests forwarded (Announcer+Requests).
    let requests = Mutex(RouteRequests())
    /// Wakes ``runRequests()`` when a route becomes wanted.
    let requestWaker = TickWaker()
    /// Whether a message or receipt still waits for a destination (set by the router):
    /// an ask falls due only while one does.
    let stillWaiting = PeerCheck()
    /// When each neighbour gets its next route summary (Announcer+Summaries).
    let summaryTimers = Mutex(SummaryTimers())
    /// Wakes ``runSummaries()`` when a summary falls due sooner than it sleeps.
    let summaryWaker = TickWaker()
    /// The summaries' base interval: the configured one, or a power profile's longer one.
    let summaryInterval: PacedInterval
    /// Keeps the own announcements' sequences across restarts (nil: not kept).
    let stateStore: (any AnnounceStateStore)?
    /// Keeps the route table across restarts (nil: not kept; Announcer+TableSaves).
    let tableStore: (any RouteTableStore)?
    /// The states ``runStateSaves()`` writes, newest only.
    private let stateSaves: (stream: AsyncStream<AnnounceState>, continuation: AsyncStream<AnnounceState>.Continuation)

    init(
        localPeerID: PeerID,
        configuration: RoutingConfiguration,
        signer: (any ReceiptSigner)?,
        routes: RouteTable,
        links: LinkTable,
        relay: RelaySwitch,
        clock: any MeshClock,
        stats: StatsRecorder,
        bus: EventBus,
        logger: Logger,
        stateStore: (any AnnounceStateStore)? = nil,
        tableStore: (any RouteTableStore)? = nil
    ) {
        self.stateStore = stateStore
        self.tableStore = tableStore
        stateSaves = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.localPeerID = localPeerID
        self.configuration = configuration
        summaryInterval = PacedInterval(configured: configuration.summaryInterval)
        self.signer = signer
        self.routes = routes
        self.links = links
        self.relay = relay
        self.clock = clock
        self.stats = stats
        self.bus = bus
        self.logger = logger
        // The node passes a start from the wall clock, so a restarted node's new
        // announcements are newer than its last ones; without it, a random start in
        // the lower half of the range.
        sequence = Mutex(configuration.firstSequence ?? UInt64.random(in: 1...(UInt64.max >> 2)))
    }

    /// Sets what runs when a route is learned (the delivery scheduler's drain).
    func onRouteLearned(_ handler: @escaping @Sendable (PeerID) -> Void) {
        routeLearned.set(handler)
    }

    /// Whether this router takes part in routing at all.
    var isActive: Bool { signer != nil }

    /// This node's latest own announcement, as an answer to a route request: with the
    /// solicited flag when a request made it (it goes back toward the requesters, as
    /// the first copies did); nil before its first.
    var latestAnswer: AnnounceFrame? {
        latest.withLock { own in
            own.frame.map { frame in
                var answer = frame
                answer.solicited = frame.sequence != own.unsolicited?.sequence
                return answer
            }
        }
    }

    /// What a neighbour is given of this node when no request asked: its latest own
    /// announcement made without the solicited flag (the sequence the rest of the mesh
    /// holds; a newer solicited one would cross the whole mesh from that neighbour on);
    /// nil before its first.
    var latestUnsolicited: AnnounceFrame? { latest.withLock { $0.unsolicited ?? $0.frame } }

    /// The sequence this node's summaries list for itself: that of
    /// ``latestUnsolicited``; nil before its first.
    var summarisedOwnSequence: UInt64? { latestUnsolicited?.sequence }

    // MARK: Originating

    /// Runs the periodic announcements until the task is cancelled.
    func run() async {
        guard isActive else { return }
        while !Task.isCancelled {
            let jitter = Double.random(in: -configuration.announceJitter...configuration.announceJitter)
            let wait = configuration.refreshInterval(origins: routes.origins) * (1 + jitter)
            do { try await clock.sleep(for: wait) } catch { return }
            routes.prune(now: clock.now)
            originate()
        }
    }

    /// Takes the state the store kept from before a restart (docs/PROTOCOL.md §A.5,
    /// "Restarting"): new sequences count on from above its latest, and until this
    /// node announces anew, what it gives a neighbour of itself is a repeat of its
    /// unsolicited sequence (the same signed bytes the mesh holds), not a new sequence
    /// that would cross every link. Call before any link comes up.
    func resume() async {
        guard let signer, let stateStore, let state = await stateStore.load() else { return }
        sequence.withLock { $0 = max($0, state.latest) }
        latest.withLock { own in
            guard own.frame == nil else { return }
            let frame = AnnounceFrame.originate(sequence: state.unsolicited, signer: signer, origin: localPeerID)
            own.frame = frame
            own.unsolicited = frame
        }
        logger.debug("announcements resume at sequence \(state.unsolicited) (new ones above \(state.latest))")
    }

    /// Writes each new own-announcement state to the store, the newest when several
    /// wait, until the task is cancelled.
    func runStateSaves() async {
        guard let stateStore else { return }
        for await state in stateSaves.stream { await stateStore.save(state) }
    }

    /// Announces this node to every neighbour with a new sequence number; `solicited`
    /// (a route request asked for it) sets the solicited flag on the copies sent now
    /// (not on the one kept: ``latestAnswer`` adds it back).
    func originate(solicited: Bool = false) {
        guard let signer, relay.isEnabled else { return }
        var frame = latest.withLock { own in
            let next = sequence.withLock { value -> UInt64 in
                value &+= 1
                return value
            }
            let frame = AnnounceFrame.originate(sequence: next, signer: signer, origin: localPeerID)
            own.frame = frame
            if !solicited { own.unsolicited = frame }
            if stateStore != nil, let unsolicited = own.unsolicited {
                stateSaves.continuation.yield(AnnounceState(unsolicited: unsolicited.sequence, latest: next))
            }
            return frame
        }
        frame.solicited = solicited
        for session in links.all where !session.isClosed { session.queueAnnounce(frame) }
    }

    /// A link to `peer` came up: this node's latest unsolicited announcement (the same sequence:
    /// the rest of the mesh learns of the new link from `peer`'s re-announcements,
    /// only where it makes a route shorter), or a first one to everyone; then a route
    /// summary, which makes `peer` list what it lacks (a neighbour that knows the mesh
    /// already costs a summary, a new one gets every route it lacks), or, with
    /// summaries off, every route this node knows (but those through `peer`). Routes
    /// `peer` announced before its link went are used again at once (the table keeps
    /// them, dormant, while it is away): what waits for their destinations goes.
    func linkUp(_ peer: PeerID) {
        guard isActive, relay.isEnabled else { return }
        if let own = latestUnsolicited {
            for session in links.sessions(to: peer) { session.queueAnnounce(own) }
        } else {
            originate()
        }
        summaryOrTable(to: peer)
        scheduleSummaries(to: peer)
        for destination in routes.neighbourBack(peer, now: clock.now) where destination != peer {
            learned(destination, reason: "via \(peer), linked again")
        }
    }

    /// Relaying was switched back on: announce this node, and a summary (or every
    /// route it knows) to every neighbour.
    func relayResumed() {
        guard isActive else { return }
        originate()
        for peer in links.peers { summaryOrTable(to: peer) }
    }

    private func summaryOrTable(to peer: PeerID) {
        if configuration.summaryInterval > .zero {
            sendSummary(to: peer, now: clock.now)
        } else {
            sendTable(to: peer)
        }
    }

    private func sendTable(to peer: PeerID) {
        let frames = routes.advertisable(to: peer, maxHops: configuration.maxHops, now: clock.now)
        guard !frames.isEmpty else { return }
        for session in links.sessions(to: peer) {
            for frame in frames { session.queueAnnounce(frame) }
        }
    }

    /// The last link to `peer` went down: routes through it go (docs/PROTOCOL.md §A.5,
    /// "Route selection"). This node does not announce itself anew: a node left without a
    /// feasible route to it asks for a new sequence when a message waits (route
    /// requests), instead of every lost link costing a network-wide announcement.
    func neighbourLost(_ peer: PeerID) {
        summaryTimers.withLock { $0.lost(peer) }
        let (lost, rerouted) = routes.neighbourLost(peer, now: clock.now)
        guard !lost.isEmpty else { return }
        logger.debug(
            "\(lost.count) routes through \(peer) dropped (its last link went down), \(rerouted.count) moved to another neighbour"
        )
        for destination in rerouted { learned(destination, reason: "rerouted: \(peer) went away") }
        for destination in lost where !rerouted.contains(destination) {
            bus.emit(.route(.routeLost, to: destination, reason: "its next hop \(peer) went away"))
        }
    }

    // MARK: Receiving

    /// Takes a routing frame (an announcement or a route request) that arrived on
    /// `session`.
    func accept(_ frame: Frame, from session: LinkSession) {
        switch frame {
        case .announce(let announce): accept(announce, from: session)
        case .routeRequest(let request): accept(request, from: session)
        case .routeSummary(let summary): accept(summary, from: session)
        case .routeListing(let listing): accept(listing, from: session)
        case .routeHops(let hops): accept(hops, from: session)
        default: break
        }
    }

    /// Takes an announcement that arrived on `session`.
    func accept(_ frame: AnnounceFrame, from session: LinkSession) {
        guard session.takeInboundAnnounceToken() else {
            return reject("rateLimited", frame, session, detail: "over its share of the link")
        }
        guard let signer else {
            return reject("noVerifier", frame, session, detail: "this router has no identity signer")
        }
        guard frame.origin != localPeerID else {
            return reject("aboutSelf", frame, session, detail: "it claims this node")
        }
        guard frame.hops >= 1, frame.hops <= configuration.maxHops else {
            return reject("hopLimit", frame, session, detail: "\(frame.hops) hops (limit \(configuration.maxHops))")
        }
        guard frame.verify(with: signer) else {
            return reject("badSignature", frame, session, detail: "not signed by its origin")
        }
        switch routes.consider(frame, from: session.remote, transport: session.transport, now: clock.now) {
        case .rejected(let reason):
            reject(reason, frame, session, detail: "sequence \(frame.sequence)")
        case .ignored:
            session.heard(frame)
            stats.update { $0.announcesIgnored += 1 }
            offerShortcut(to: session, against: frame)
        case .accepted(let changed, let refresh, let gained):
            session.heard(frame)
            stats.update { $0.announcesAccepted += 1 }
            // A refresh (the same route at a newer sequence) is not news for the summary
            // timers: with many origins one arrives every few seconds, and resetting on
            // each kept summaries at the shortest interval for good.
            if !refresh { tableChanged() }
            if relay.isEnabled, frame.hops < configuration.maxHops {
                let onward = frame.forwarded()
                // Neighbours whose route requests this node forwarded get it as an
                // answer. A solicited announcement goes nowhere else unless it gave
                // this node a route where it had none usable: elsewhere, and here too
                // where it only moved the route, the older sequence still routes,
                // until the origin's next periodic announcement (moving the route is
                // what the new sequence does at most nodes it reaches, as the first
                // copy of it often comes from another neighbour than the old route's).
                let asked = Set(
                    requests.withLock {
                        $0.requesters.take(
                            frame.origin,
                            sequence: frame.sequence,
                            hops: onward.hops,
                            now: clock.now
                        )
                    }
                )
                let everyone = !frame.solicited || gained
                var returned = 0
                var withheld = 0
                for other in links.all
                where !other.isClosed && other.remote != session.remote && other.remote != frame.origin {
                    if asked.contains(other.remote) {
                        other.queueAnnounce(onward)
                        returned += 1
                        continue
                    }
                    guard everyone else {
                        withheld += 1
                        continue
                    }
                    // A neighbour that already told this node of the same sequence at
                    // most one hop further than `onward` offers is as close already.
                    if routes.neighbour(
                        other.remote,
                        knows: frame.origin,
                        sequence: frame.sequence,
                        within: onward.hops &+ 1
                    ) {
                        stats.update { $0.announcesSuppressed += 1 }
                        continue
                    }
                    other.queueAnnounce(onward, unlessKnown: true)
                }
                if returned + withheld > 0 {
                    stats.update { stats in
                        if returned > 0 { stats.routeRequests["returned", default: 0] += returned }
                        if withheld > 0 { stats.routeRequests["withheld", default: 0] += withheld }
                    }
                }
            }
            if changed {
                learned(
                    frame.origin,
                    transport: session.transport,
                    reason: "via \(session.remote) in \(frame.hops) hops"
                )
            }
        }
    }

    /// The neighbour on `session` announced `frame`, which this node does not use: where
    /// this node's route in use is of the same sequence, does not go through that
    /// neighbour and, one hop further, would be shorter than the neighbour's own route,
    /// the neighbour is sent that route (docs/PROTOCOL.md §A.5, ANNOUNCE send rule 5). Its table
    /// matches this node's in route summaries (they list sequences, not hops), so a
    /// shorter copy lost on the way would otherwise be missed until the origin's next
    /// sequence, and every node behind that neighbour with it.
    private func offerShortcut(to session: LinkSession, against frame: AnnounceFrame) {
        // `frame.hops` counts from this node: the neighbour's own route is one hop
        // less, and this node's route sent to it (`ours`) one hop more. `ours` has at
        // least 2 hops, so below 4 there is nothing to offer: most ignored
        // announcements leave here, without taking the table's lock.
        guard relay.isEnabled, frame.hops > 3 else { return }
        guard
            let ours = routes.answer(
                for: frame.origin,
                atLeast: frame.sequence,
                to: session.remote,
                maxHops: configuration.maxHops,
                now: clock.now
            ),
            ours.sequence == frame.sequence, ours.hops < frame.hops - 1
        else { return }
        session.queueAnnounce(ours)
        stats.update { $0.shortcutsOffered += 1 }
    }

    /// `destination` got a route in use, or its route moved to another neighbour: no
    /// need to ask for one any more, a `routeLearned` event, and what waits for it goes
    /// (the delivery scheduler's drain).
    private func learned(_ destination: PeerID, transport: String? = nil, reason: String) {
        requests.withLock { $0.satisfied(destination) }
        bus.emit(.route(.routeLearned, to: destination, transport: transport, reason: reason))
        routeLearned(destination)
    }

    private func reject(_ reason: String, _ frame: AnnounceFrame, _ session: LinkSession, detail: String) {
        stats.update { $0.announcesRejected[reason, default: 0] += 1 }
        logger.trace("announcement of \(frame.origin) from \(session.remote) rejected (\(reason)): \(detail)")
    }
}
