import Logging
import MeshCore

#if canImport(CAvahi)
// Browsing in windows, as a power profile asks (``TransportPacing/browseInterval``):
// the service stays published, so others find this node; it looks for them only for
// ``browseWindow`` once per interval.
extension MDNSDiscovery {
    /// How long each browse window stays open: long enough for Avahi's first queries
    /// (1, 2, 4, 8 s apart) and the resolves they start.
    static let browseWindow: Duration = .seconds(30)

    /// Browses for ``browseWindow`` once every `interval` from now on, or all the time
    /// when `interval` is nil or no longer than a window.
    nonisolated func setBrowseInterval(_ interval: Duration?) {
        browsePacing.continuation.yield(interval.flatMap { $0 > Self.browseWindow ? $0 : nil })
    }

    /// Whether a browser is open now (false between two windows).
    var isBrowsing: Bool { browsing }

    /// Follows the browse interval until the task is cancelled: each change ends the
    /// current cycle and starts the new one with an open window.
    func runBrowseWindows() async {
        var cycle: Task<Void, Never>?
        for await interval in browsePacing.stream {
            cycle?.cancel()
            await cycle?.value
            openWindow()
            if let interval {
                logger.info(
                    "mDNS: browsing for \(Self.browseWindow.wholeMilliseconds / 1000) s every \(interval.wholeMilliseconds / 1000) s (power pacing)"
                )
                cycle = Task { await self.cycle(every: interval) }
            } else {
                logger.info("mDNS: browsing continuously")
                cycle = nil
            }
        }
        cycle?.cancel()
    }

    /// Closes the open window after ``browseWindow``, opens the next one `interval`
    /// after the last opened, until cancelled.
    private func cycle(every interval: Duration) async {
        var opened = clock.now
        while !Task.isCancelled {
            do { try await clock.sleep(until: opened + Self.browseWindow) } catch { return }
            closeWindow()
            do { try await clock.sleep(until: opened + interval) } catch { return }
            opened = clock.now
            openWindow()
        }
    }

    /// Makes a new browser (now, or when the daemon is back); Avahi reports every
    /// service again, and each is resolved and counted as seen in this window.
    private func openWindow() {
        guard phase == .running else { return }
        browsePaused = false
        seenInWindow = []
        stopBrowser()
        browseIfNeeded()
    }

    private func stopBrowser() {
        guard browsing else { return }
        session.stopBrowsing()
        browsing = false
    }

    /// Frees the browser; a known service not resolved during the window is reported
    /// lost (its removal could not be heard while the browser was closed).
    private func closeWindow() {
        guard phase == .running else { return }
        browsePaused = true
        stopBrowser()
        guard daemonAvailable else { return }
        for (key, service) in known.sorted(by: { $0.key.name < $1.key.name }) where !seenInWindow.contains(key) {
            known[key] = nil
            logger.debug("mDNS: lost \(service) (not seen in the last browse window)")
            continuation.yield(.lost(service))
        }
    }
}
#endif
