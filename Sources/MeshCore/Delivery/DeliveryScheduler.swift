import Synchronization

/// Decides when queued messages go out: a new message at once when a link to its
/// destination is up, every waiting message of a peer when a link to it comes up, and
/// again after a failed attempt on the retry schedule (the ``ReconnectConfiguration``
/// backoff: 1 → 2 → 4 … 30 s with jitter, per peer, reset by a success).
///
/// All sending happens in child tasks of ``run(_:)`` (the router's `run()`), so
/// stopping the router stops every send; messages whose send was cut stay queued.
final class DeliveryScheduler: Sendable {
    /// Work for the run loop.
    enum Work: Sendable {
        /// A message was just queued.
        case message(MessageID, PeerID)
        /// Send everything waiting for a peer (a link came up, a retry is due).
        case drain(PeerID)
        /// Wait until `at`, then drain the peer.
        case retry(PeerID, at: ContinuousClock.Instant)
        /// Send one message at once, whatever the routes and ahead of any drain (an
        /// emergency, or a flood that was waiting for a link).
        case now(MessageID, PeerID)
        /// Send a message claimed already (just queued, with a route to go by).
        case claimed(OutboundMessage)
        /// Send one message at `at` (a flood's re-broadcast delay).
        case later(MessageID, PeerID, at: ContinuousClock.Instant)
    }

    private struct PeerState {
        /// A drain is running.
        var draining = false
        /// A drain is scheduled and not yet begun.
        var drainDue = false
        /// More work arrived while draining: scan again when done.
        var again = false
        /// Consecutive failed attempts (the backoff exponent).
        var failures = 0
        /// The pending retry, if one is scheduled.
        var retryAt: ContinuousClock.Instant?
    }

    /// Messages of one peer sent at the same time by a drain.
    static let drainWindow = 64

    private let peers = Mutex<[PeerID: PeerState]>([:])
    private let work: AsyncStream<Work>
    private let continuation: AsyncStream<Work>.Continuation
    private let retry: ReconnectConfiguration
    private let clock: any MeshClock

    init(retry: ReconnectConfiguration, clock: any MeshClock) {
        (work, continuation) = AsyncStream.makeStream(of: Work.self)
        self.retry = retry
        self.clock = clock
    }

    /// Asks the run loop to do `item`.
    func schedule(_ item: Work) {
        if case .drain(let peer) = item {
            peers.withLock { $0[peer, default: PeerState()].drainDue = true }
        }
        continuation.yield(item)
    }

    /// Whether a drain of `peer` is due or running: messages queued earlier may be
    /// waiting for it, and a new one should not overtake them.
    func drains(_ peer: PeerID) -> Bool {
        peers.withLock { peers in peers[peer].map { $0.draining || $0.drainDue } ?? false }
    }

    /// Notes a failed attempt to reach `peer` and schedules its retry (unless an
    /// earlier one is pending).
    func noteFailure(to peer: PeerID) {
        let now = clock.now
        let due: ContinuousClock.Instant? = peers.withLock { peers in
            var state = peers[peer, default: PeerState()]
            let at = now + retry.jitteredDelay(attempt: state.failures)
            state.failures += 1
            defer { peers[peer] = state }
            if let pending = state.retryAt, pending <= at { return nil }
            state.retryAt = at
            return at
        }
        if let due { schedule(.retry(peer, at: due)) }
    }

    /// Notes a successful send to `peer`: the backoff starts over.
    func noteSuccess(to peer: PeerID) {
        peers.withLock { peers in
            if peers[peer]?.failures != 0 { peers[peer]?.failures = 0 }
        }
    }

    /// Runs until the task is cancelled or ``finish()`` is called: each work item
    /// becomes child tasks that call `pipeline`.
    func run(_ pipeline: DeliveryPipeline) async {
        await withDiscardingTaskGroup { group in
            for await item in work {
                switch item {
                case .message(let id, let peer):
                    guard pipeline.hasRoute(to: peer) || pipeline.mayFlood else {
                        pipeline.routeWanted(peer)  // it waits: ask the neighbours for a route
                        continue
                    }
                    group.addTask { await pipeline.send(id) }
                case .now(let id, _):
                    group.addTask { await pipeline.send(id) }
                case .claimed(let message):
                    group.addTask { await pipeline.transmitOrRequeue(message) }
                case .later(let id, _, let at):
                    group.addTask {
                        do { try await self.clock.sleep(until: at) } catch { return }
                        await pipeline.send(id)
                    }
                case .drain(let peer):
                    guard beginDrain(peer) else { continue }
                    group.addTask { await self.drainLoop(peer, pipeline) }
                case .retry(let peer, let at):
                    group.addTask {
                        do { try await self.clock.sleep(until: at) } catch { return }
                        let current = self.peers.withLock { peers -> Bool in
                            guard peers[peer]?.retryAt == at else { return false }
                            peers[peer]?.retryAt = nil
                            return true
                        }
                        if current { self.schedule(.drain(peer)) }
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// Ends ``run(_:)``.
    func finish() {
        continuation.finish()
    }

    /// Marks a drain of `peer` running; false (and a rescan flag) when one already is.
    private func beginDrain(_ peer: PeerID) -> Bool {
        peers.withLock { peers in
            peers[peer, default: PeerState()].drainDue = false
            if peers[peer]?.draining == true {
                peers[peer]?.again = true
                return false
            }
            peers[peer]?.draining = true
            peers[peer]?.again = false
            return true
        }
    }

    /// Drains `peer` until nothing is waiting, no link is left, or an attempt fails;
    /// rescans when work arrived meanwhile.
    private func drainLoop(_ peer: PeerID, _ pipeline: DeliveryPipeline) async {
        while !Task.isCancelled {
            await pipeline.drain(to: peer, window: Self.drainWindow)
            let again = peers.withLock { peers -> Bool in
                if peers[peer]?.again == true {
                    peers[peer]?.again = false
                    return true
                }
                peers[peer]?.draining = false
                return false
            }
            guard again else { return }
        }
        peers.withLock { $0[peer]?.draining = false }
    }
}
