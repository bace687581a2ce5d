import Logging
import Synchronization

/// Remembers which transport traffic to each peer last used; a change is an
/// escalation (to a worse priority) or a de-escalation (back to a better one), told
/// as an event, a counter and a log line with the reason.
final class PathTracker: Sendable {
    private struct Path {
        var transport: String
        var priority: Int
    }

    private struct State {
        var active: [PeerID: Path] = [:]
        var lastFailure: [PeerID: String] = [:]
    }

    private let state = Mutex(State())
    private let stats: StatsRecorder
    private let bus: EventBus
    private let logger: Logger

    init(stats: StatsRecorder, bus: EventBus, logger: Logger) {
        self.stats = stats
        self.bus = bus
        self.logger = logger
    }

    /// The transport of the last acknowledged send to `peer`.
    func activeTransport(to peer: PeerID) -> String? {
        state.withLock { $0.active[peer]?.transport }
    }

    /// Notes why a send to `peer` failed on a link (the reason of a later escalation).
    func noteFailure(to peer: PeerID, _ reason: String) {
        state.withLock { $0.lastFailure[peer] = reason }
    }

    /// Notes that `session` acknowledged a frame for `peer`.
    func noteSuccess(to peer: PeerID, over session: LinkSession) {
        let change: (previous: Path, reason: String?)? = state.withLock { state in
            let previous = state.active[peer]
            guard previous?.transport != session.transport else { return nil }
            state.active[peer] = Path(transport: session.transport, priority: session.priority)
            guard let previous else { return nil }
            return (previous, state.lastFailure[peer])
        }
        guard let change else { return }
        let previous = change.previous
        if session.priority > previous.priority {
            let reason = change.reason ?? "\(previous.transport) failed"
            stats.update { stats in
                stats.escalations += 1
                stats.transports[previous.transport, default: .init()].escalationsFrom += 1
            }
            logger.notice("traffic to \(peer) escalated \(previous.transport) -> \(session.transport): \(reason)")
            bus.emit(.escalated(peer: peer, from: previous.transport, to: session.transport, reason: reason))
        } else if session.priority < previous.priority {
            stats.update { stats in
                stats.deEscalations += 1
                stats.transports[session.transport, default: .init()].deEscalationsTo += 1
            }
            logger.notice("traffic to \(peer) moved back \(previous.transport) -> \(session.transport)")
            bus.emit(.deEscalated(peer: peer, from: previous.transport, to: session.transport))
        }
    }
}
