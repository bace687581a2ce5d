import Logging
import Synchronization

/// One authenticated link in use by the router: sequence numbers, the in-flight
/// window, hop acknowledgements, RTT, keepalive and health.
///
/// Three loops run per session (``run(_:)``): the reader (never writes, so two
/// back-pressured peers cannot deadlock; it hands each DATA frame to a delivery task
/// of its own and reads on, at most ``maxDeliveriesInFlight`` at once, and a frame is
/// acknowledged when its delivery ends; a chunk of a multi-chunk message, a second copy
/// of a message in delivery and a PING wait until the deliveries before them ended),
/// the control writer (acks and pongs,
/// coalesced) and the ticker (ack timeouts, keepalive, dead-link detection), which
/// sleeps until the earliest of those is due (``TickWaker``).
final class LinkSession: Sendable {
    let link: any Link
    let id: LinkID
    let transport: String
    let priority: Int
    let capabilities: TransportCapabilities
    let remote: PeerID
    let role: HandshakeRole
    let cipher: any SessionCipher
    /// The wire version the remote announced in the handshake.
    let remoteVersion: UInt8
    /// The optional features the remote announced in the handshake.
    let remoteCapabilities: Capabilities
    /// The features both ends speak on this link: the only ones whose frames go out or
    /// are taken in (docs/PROTOCOL.md §A.11).
    let shared: Capabilities
    let configuration: RouterConfiguration
    /// The keepalive interval in force, shared by the router's links.
    let keepalive: PacedInterval
    let logger: Logger
    let clock: any MeshClock
    let stats: StatsRecorder
    /// Data frames and bytes this link moved (folded into the router's stats on close).
    let data = DataCounters()
    /// Every frame (data and control) written and read, for the peer snapshot; atomics
    /// so the hot path takes no lock for them.
    let framesWritten = Atomic<Int>(0)
    let framesRead = Atomic<Int>(0)
    /// Packets handed to `link.send` and sends that returned; while they differ a write
    /// is pending, and the ticker's ``WriteStallDetector`` watches it make progress.
    let writesStarted = Atomic<Int>(0)
    let writesFinished = Atomic<Int>(0)
    /// When the latest write began, in nanoseconds after ``epoch`` (stored before
    /// `writesStarted` counts it), so the ticker measures a wait from its start.
    let writeStartedAt = Atomic<Int64>(0)
    /// The instant ``writeStartedAt`` counts from.
    let epoch: ContinuousClock.Instant
    /// Set when the ticker ends the link because its writes stalled.
    let endedByWriteStall = Atomic<Bool>(false)
    /// Wakes the ticker when something new may be due before its planned wake-up.
    let ticker = TickWaker()

    private let writeLock = AsyncLock()
    private let window: AsyncSemaphore
    /// Inbound DATA frames handed to delivery whose commit has not landed: a full
    /// window makes the reader wait (back-pressure on the remote).
    let deliveries = AsyncSemaphore(permits: LinkSession.maxDeliveriesInFlight)
    let controlSignal: AsyncStream<Void>.Continuation
    let controlStream: AsyncStream<Void>
    let state: Mutex<State>

    /// The most inbound DATA frames of one link being delivered at once: frames read
    /// while earlier ones wait for their commit share the next one (group commit).
    static let maxDeliveriesInFlight = 64

    enum AcceptResult: Sendable {
        /// Take the frame and acknowledge it.
        case accepted
        /// Already had it: acknowledge, do not deliver again.
        case duplicate
        /// Refused: do not acknowledge (the sender will escalate).
        case refused
    }

    struct Waiter {
        var continuation: CheckedContinuation<Void, any Error>?
        var result: Result<Void, MeshError>?
        var sentAt: ContinuousClock.Instant?
        var deadline: ContinuousClock.Instant?
        var timeout: Duration
    }

    struct State {
        var nextSequence: UInt32 = 1
        var waiters: [UInt32: Waiter] = [:]
        var ackedThrough: UInt32 = 0
        var smoothedRTT: Double?
        var consecutiveFailures = 0
        var closed: MeshError?
        /// Receiving side: the DATA frames recorded and the ACK owed.
        var received: ReceiveWindow
        /// Message IDs of the DATA frames being delivered alongside others (at most
        /// one frame per ID: another copy waits until they all ended).
        var delivering: Set<MessageID> = []
        var pongsOwed: [UInt64] = []
        var pingOwed = false
        var pingNonce: UInt64 = 0
        var pingSentAt: (nonce: UInt64, at: ContinuousClock.Instant)?
        var lastReceived: ContinuousClock.Instant
        var lastPingSent: ContinuousClock.Instant
        /// Route announcements waiting for this link's budget.
        var announces: AnnounceQueue
        /// The newest (sequence, hops) the remote announced per origin on this link:
        /// news passed on that it already told this node of is not sent (``AnnounceQueue``).
        var heard: [PeerID: (sequence: UInt64, hops: UInt8)] = [:]
        /// The remote's share of announcements: more are dropped unread.
        var inboundAnnounces: AnnounceBudget
        /// This node's address record, waiting for the control writer.
        var addressesOwed: AddressesFrame?
        /// Address records the remote sent on this link (a few are honoured).
        var inboundAddresses = 0
        /// Topic frames waiting to go out (`Topics/`).
        var gossip = GossipOutbox()
    }

    init(
        link: any Link,
        id: LinkID,
        transport: String,
        priority: Int,
        capabilities: TransportCapabilities,
        remote: PeerID,
        role: HandshakeRole,
        cipher: any SessionCipher,
        remoteVersion: UInt8 = Frame.version,
        remoteCapabilities: Capabilities = .all,
        configuration: RouterConfiguration,
        keepalive: PacedInterval? = nil,
        clock: any MeshClock,
        stats: StatsRecorder,
        logger: Logger
    ) {
        self.keepalive = keepalive ?? PacedInterval(configured: configuration.keepaliveInterval)
        self.link = link
        self.id = id
        self.transport = transport
        self.priority = priority
        self.capabilities = capabilities
        self.remote = remote
        self.role = role
        self.cipher = cipher
        self.remoteVersion = remoteVersion
        self.remoteCapabilities = remoteCapabilities
        self.shared = configuration.features.consistent.intersection(remoteCapabilities.consistent)
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.stats = stats
        self.window = AsyncSemaphore(permits: max(1, configuration.windowPerLink))
        (controlStream, controlSignal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let now = clock.now
        self.epoch = now
        // Outbound: the configured rate, lowered to the link's control share. Inbound:
        // twice that (and twice the burst), so an honest neighbour, held to the same
        // rate by its own budget, is never cut, and a flooder gets no more.
        let rate = configuration.routing.announceRate(for: capabilities)
        let burst = configuration.routing.announceBurst
        self.state = Mutex(
            State(
                received: ReceiveWindow(hold: configuration.escalation.ackTimeoutMax * 2),
                lastReceived: now,
                lastPingSent: now,
                announces: AnnounceQueue(budget: AnnounceBudget(rate: rate, burst: burst, now: now)),
                inboundAnnounces: AnnounceBudget(rate: rate * 2, burst: burst * 2, now: now)
            )
        )
    }

    // MARK: Views for the router

    var candidate: LinkCandidate {
        state.withLock { state in
            LinkCandidate(
                linkID: id,
                transport: transport,
                priority: priority,
                capabilities: capabilities,
                smoothedRTT: state.smoothedRTT.map { .milliseconds(Int64($0 * 1000)) },
                consecutiveFailures: state.consecutiveFailures
            )
        }
    }

    var isClosed: Bool { state.withLock { $0.closed != nil } }

    var snapshot: LinkSnapshot {
        state.withLock { state in
            LinkSnapshot(
                id: id.rawValue,
                transport: transport,
                priority: priority,
                address: link.remoteAddress,
                rttMilliseconds: state.smoothedRTT.map { $0 * 1000 },
                consecutiveFailures: state.consecutiveFailures,
                inFlight: state.waiters.count,
                framesSent: framesWritten.load(ordering: .relaxed),
                framesReceived: framesRead.load(ordering: .relaxed),
                outbound: role == .initiator,
                wireVersion: Int(remoteVersion),
                capabilities: remoteCapabilities.names
            )
        }
    }

    func recordFailure() {
        state.withLock { $0.consecutiveFailures += 1 }
        // A degraded link is pinged sooner.
        ticker.wake(before: clock.now)
    }

    // MARK: Sending

    /// Sends one data frame and waits for its hop acknowledgement.
    /// - Throws: `.ackTimeout` or `.linkClosed`.
    func sendData(_ frame: DataFrame, timeout: Duration) async throws {
        // A frame this link must not carry counts as acknowledged (``outbound(_:)``).
        guard var frame = outbound(frame) else { return }
        // An emergency goes ahead of the frames waiting for the window (§A.10: ahead
        // of every queue).
        try await window.acquire(ahead: frame.flags & DataFrame.emergencyFlag != 0)
        defer { window.release() }
        let sequence: UInt32 = try await writeLock.withLock {
            let sequence = try state.withLock { state throws(MeshError) -> UInt32 in
                if let closed = state.closed { throw closed }
                let sequence = state.nextSequence
                guard sequence < UInt32.max else {
                    throw MeshError(.linkClosed, "link \(id) used up its sequence numbers; it will be re-established")
                }
                state.nextSequence += 1
                state.waiters[sequence] = Waiter(timeout: timeout)
                return sequence
            }
            frame.sequence = sequence
            do {
                try await writeFrameLocked(.data(frame))
            } catch {
                _ = state.withLock { $0.waiters.removeValue(forKey: sequence) }
                throw error
            }
            return sequence
        }
        try await waitForAck(sequence)
    }

    /// Waits for the hop acknowledgement of `sequence`; a cancelled wait gives up the
    /// frame's slot and throws `CancellationError`.
    private func waitForAck(_ sequence: UInt32) async throws {
        let now = clock.now
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                var deadline: ContinuousClock.Instant?
                let ready: Result<Void, any Error>? = state.withLock { state in
                    guard var waiter = state.waiters[sequence] else {
                        return .failure(state.closed ?? MeshError(.linkClosed, "link \(id) closed"))
                    }
                    if let result = waiter.result {
                        state.waiters[sequence] = nil
                        return result.mapError { $0 }
                    }
                    if Task.isCancelled {
                        state.waiters[sequence] = nil
                        return .failure(CancellationError())
                    }
                    waiter.continuation = continuation
                    waiter.sentAt = now
                    waiter.deadline = now + waiter.timeout
                    deadline = waiter.deadline
                    state.waiters[sequence] = waiter
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
                if let deadline { ticker.wake(before: deadline) }
            }
        } onCancel: {
            let continuation: CheckedContinuation<Void, any Error>? = state.withLock { state in
                guard let continuation = state.waiters[sequence]?.continuation else { return nil }
                state.waiters[sequence] = nil
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    private func writeFrameLocked(_ frame: Frame) async throws {
        let sealed = try cipher.seal(frame.encoded())
        framesWritten.add(1, ordering: .relaxed)
        for packet in try PacketFramer.packets(for: sealed, mtu: link.mtu) {
            let started = clock.now - epoch
            writeStartedAt.store(
                started.components.seconds * 1_000_000_000 + started.components.attoseconds / 1_000_000_000,
                ordering: .relaxed
            )
            writesStarted.add(1, ordering: .releasing)
            defer { writesFinished.add(1, ordering: .relaxed) }
            try await link.send(packet)
        }
    }

    func writeControl(_ frames: [Frame]) async throws {
        try await writeLock.withLock {
            for frame in frames { try await writeFrameLocked(frame) }
        }
    }

    // MARK: Capabilities (the one place frames are matched to what the remote speaks)

    /// Whether a frame of `kind` goes out on this link: its feature is one both ends
    /// announced. A frame that does not is withheld and counted.
    func carries(_ kind: Frame.Kind) -> Bool {
        guard shared.isSuperset(of: Capabilities.required(for: kind)) else {
            stats.update { $0.framesWithheld[kind.name, default: 0] += 1 }
            return false
        }
        return true
    }

    /// A DATA frame as this link may carry it, or nil when it must not go out at all.
    /// A receipt for a remote that did not announce receipts is withheld (the sender
    /// counts it as acknowledged: the remote would take it for a message; one it only
    /// relays goes on unchanged). Whether this node speaks receipts does not matter: a
    /// node with receipts off still carries other nodes' receipts to a remote that
    /// announced them. The flood, emergency and flood-through flags are cleared for a
    /// remote without those features, so a flood copy reaches it as an ordinary message
    /// (or an ordinary flood copy) it can deliver or relay.
    func outbound(_ frame: DataFrame) -> DataFrame? {
        var frame = frame
        if frame.flags & DataFrame.receiptFlag != 0 && frame.destination == remote
            && !remoteCapabilities.consistent.contains(.receipts)
        {
            stats.update { $0.framesWithheld["receipt", default: 0] += 1 }
            return nil
        }
        // `shared` is consistent: without `flooding` it holds neither feature that needs it.
        let features: [(Capabilities, UInt16)] = [
            (.flooding, DataFrame.floodFlag), (.emergency, DataFrame.emergencyFlag),
            (.floodThrough, DataFrame.floodThroughFlag),
        ]
        for (feature, flag) in features where !shared.contains(feature) { frame.flags &= ~flag }
        return frame
    }

    /// An inbound DATA frame with the flood and emergency flags cleared when this node
    /// switched those features off, and the flood-through flag when the link does not
    /// share it (each cleared flag is counted), so it is handled as an ordinary message.
    /// A receipt for a node with receipts off is ignored (and counted) by the delivery
    /// pipeline, which then has no receipt signer.
    func inbound(_ frame: DataFrame) -> DataFrame {
        var frame = frame
        let local = configuration.features.consistent
        if frame.flags & DataFrame.floodFlag != 0 && !local.contains(.flooding) {
            stats.update { $0.framesIgnored["flood", default: 0] += 1 }
            frame.flags &= ~(DataFrame.floodFlag | DataFrame.emergencyFlag | DataFrame.floodThroughFlag)
        } else if frame.flags & DataFrame.emergencyFlag != 0 && !local.contains(.emergency) {
            stats.update { $0.framesIgnored["emergency", default: 0] += 1 }
            frame.flags &= ~DataFrame.emergencyFlag
        }
        if frame.flags & DataFrame.floodThroughFlag != 0 && !shared.contains(.floodThrough) {
            stats.update { $0.framesIgnored["flood_through", default: 0] += 1 }
            frame.flags &= ~DataFrame.floodThroughFlag
        }
        return frame
    }

    // MARK: Closing

    /// Fails every waiter and closes the link.
    func close(_ error: MeshError) async {
        let continuations: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            if state.closed == nil { state.closed = error }
            let pending = state.waiters.values.compactMap(\.continuation)
            for (sequence, waiter) in state.waiters where waiter.continuation == nil && waiter.result == nil {
                var failed = waiter
                failed.result = .failure(error)
                state.waiters[sequence] = failed
            }
            state.waiters = state.waiters.filter { $0.value.continuation == nil }
            return pending
        }
        for continuation in continuations { continuation.resume(throwing: error) }
        window.fail(error)
        deliveries.fail(error)
        writeLock.fail(error)
        controlSignal.finish()
        await link.close()
    }
}
