import Logging
import MeshCore

#if canImport(CAvahi)
// Losing the daemon and reconnecting to it.
extension MDNSDiscovery {
    func markDaemonGone() {
        publishedForClient = false
        browsing = false
        if daemonAvailable {
            daemonAvailable = false
            continuation.yield(.daemon(available: false))
        }
        for (_, service) in known.sorted(by: { $0.key.name < $1.key.name }) {
            continuation.yield(.lost(service))
        }
        known.removeAll()
    }

    /// One log line per outage.
    func reportUnavailable(_ why: String) {
        guard !reportedUnavailable else { return }
        reportedUnavailable = true
        logger.warning("mDNS: \(why); waiting for it, other transports are unaffected")
    }

    /// Replaces the failed client by a new no-fail one, which waits for the daemon.
    func reconnect() {
        guard phase == .running else { return }
        do {
            try session.connect()
        } catch {
            logger.debug("mDNS: cannot make an Avahi client yet (\(error)); retrying")
            scheduleReconnect()
        }
    }

    func scheduleReconnect() {
        retrySink.yield()
    }
}

#endif
