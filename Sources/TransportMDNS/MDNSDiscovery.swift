import Logging
import MeshCore

/// What discovery reports: services found and lost, our own publication, and whether
/// the avahi-daemon is reachable.
enum MDNSDiscoveryEvent: Sendable, Equatable {
    /// A service was resolved (or resolved again with other data).
    case found(MDNSService)
    /// A previously found service went away (or the daemon did).
    case lost(MDNSService)
    /// Our service is established on the network under this name.
    case published(name: String)
    /// The daemon became reachable (`true`) or went away (`false`).
    case daemon(available: Bool)
}

#if canImport(CAvahi)

/// Publishes one service and browses one service type through the avahi-daemon, and
/// keeps doing so across daemon restarts.
///
/// ``start()`` connects; ``run()`` then consumes ``AvahiSession``'s events and acts on
/// them until its task is cancelled: resolve what was browsed, rename on a collision,
/// withdraw and re-publish around host-name conflicts, and replace the client when the
/// daemon goes away (Avahi's no-fail mode then waits for the daemon to come back).
actor MDNSDiscovery {
    /// Discovery events; one consumer; finishes when ``run()`` returns.
    nonisolated let events: AsyncStream<MDNSDiscoveryEvent>
    let continuation: AsyncStream<MDNSDiscoveryEvent>.Continuation
    /// What to publish and browse; ``republish(_:txt:serviceName:version:)`` changes what is published.
    var options: MDNSDiscoveryOptions
    let logger: Logger
    /// Lines other hosts on the network can cause (name collisions): rate-limited.
    let remoteCaused: LogLimiter
    let session: AvahiSession

    enum Phase { case idle, running, stopped }
    var phase = Phase.idle
    /// Asks ``run()`` to make a new client after ``MDNSDiscoveryOptions/retryInterval``.
    let retries: AsyncStream<Void>
    let retrySink: AsyncStream<Void>.Continuation
    /// The name we publish under now (changes on collisions).
    private(set) var currentName: String
    /// Our group was committed for the current client.
    var publishedForClient = false
    var browsing = false
    /// The version of the last ``republish(_:txt:serviceName:version:)`` applied.
    var republishVersion = 0
    var daemonAvailable = false
    /// Whether "waiting for the daemon" was logged since it was last available.
    var reportedUnavailable = false
    var known: [AvahiServiceKey: MDNSService] = [:]
    /// The clock browse windows are timed on.
    let clock: any MeshClock
    /// Between two browse windows: no browser, and none made when the daemon returns.
    var browsePaused = false
    /// The services resolved since the current browse window opened.
    var seenInWindow: Set<AvahiServiceKey> = []
    /// Browse interval changes for ``run()``, the newest only.
    let browsePacing: (stream: AsyncStream<Duration?>, continuation: AsyncStream<Duration?>.Continuation)

    /// Creates a stopped discovery.
    /// - Parameter clock: times the browse windows (``setBrowseInterval(_:)``).
    /// - Throws: ``MeshError`` `.transportUnavailable` when Avahi cannot make its poll.
    init(options: MDNSDiscoveryOptions, logger: Logger, clock: any MeshClock = .system) throws(MeshError) {
        self.options = options
        self.logger = logger
        self.clock = clock
        browsePacing = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.remoteCaused = LogLimiter(logger: logger)
        self.currentName = options.serviceName
        (events, continuation) = AsyncStream.makeStream(of: MDNSDiscoveryEvent.self)
        (retries, retrySink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        do {
            session = try AvahiSession()
        } catch {
            throw MeshError(
                .transportUnavailable,
                "mDNS: Avahi could not start its event loop (\(error))",
                cause: error
            )
        }
    }

    /// Starts the poll thread and the client; returns once the client exists (the daemon
    /// may still be absent: then discovery starts when it appears). Call ``run()`` next.
    /// - Throws: ``MeshError`` `.transportUnavailable` when the poll thread cannot start,
    ///   or when no daemon answers and `waitForDaemon` is false (everything is freed
    ///   then); `.notRunning` when called twice.
    func start() throws(MeshError) {
        guard phase == .idle else {
            throw MeshError(.notRunning, "mDNS discovery was already started or stopped; make a new one")
        }
        do {
            try session.startPoll()
        } catch {
            throw MeshError(.transportUnavailable, "mDNS: Avahi's poll thread did not start (\(error))", cause: error)
        }
        phase = .running
        do {
            let (_, status) = try session.connect()
            if status == .connecting && !options.waitForDaemon {
                stopNow()
                throw MeshError(
                    .transportUnavailable,
                    "mDNS: no avahi-daemon on the D-Bus system bus (start avahi-daemon, or set wait_for_daemon: true)"
                )
            }
        } catch let error as AvahiError {
            guard options.waitForDaemon else {
                stopNow()
                throw MeshError(
                    .transportUnavailable,
                    "mDNS: cannot reach the D-Bus system bus (\(error.reason)); start dbus and avahi-daemon",
                    cause: error
                )
            }
            reportUnavailable("the D-Bus system bus does not answer (\(error.reason))")
            scheduleReconnect()
        } catch let error as MeshError {
            throw error
        } catch {
            throw MeshError(.transportUnavailable, "mDNS: \(error)", cause: error)
        }
    }

    /// Acts on Avahi's events, and makes a new client when one is due, until the calling
    /// task is cancelled; then withdraws our service, stops browsing, frees every Avahi
    /// handle and finishes ``events``. Call once, after ``start()`` succeeded.
    func run() async {
        let session = self.session
        let retries = self.retries
        let interval = options.retryInterval
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await _ in retries {
                    do { try await Task.sleep(for: interval) } catch { return }
                    await self.reconnect()
                }
            }
            group.addTask { await self.runBrowseWindows() }
            for await event in session.events {
                handle(event)
            }
            group.cancelAll()
        }
        stopNow()
    }

    private func stopNow() {
        guard phase != .stopped else { return }
        phase = .stopped
        retrySink.finish()
        browsePacing.continuation.finish()
        session.withdraw()
        session.shutdown()
        known.removeAll()
        continuation.finish()
    }

    // MARK: Events from Avahi

    private func handle(_ event: AvahiEvent) {
        guard phase == .running, event.generation == session.generation else { return }
        switch event {
        case .client(_, let status, let error):
            logger.debug("mDNS: client state \(status)\(error < 0 ? " (\(AvahiError.text(error)))" : "")")
            handleClient(status, error: error)
        case .group(_, let status, let error):
            logger.debug("mDNS: entry group state \(status)")
            handleGroup(status, error: error)
        case .browseNew(_, let key, let ownService):
            logger.debug("mDNS: browse: new \(key)\(ownService ? " (ours)" : "")")
            guard !ownService else { return }
            guard isAllowed(key) else {
                logger.trace("mDNS: ignoring \(key): interface or protocol not allowed")
                return
            }
            let rc = session.resolve(key)
            if rc < 0 { logger.debug("mDNS: cannot resolve \(key): \(AvahiError.text(rc))") }
        case .browseRemove(_, let key):
            logger.debug("mDNS: browse: removed \(key)")
            session.cancelResolve(key)
            if let service = known.removeValue(forKey: key) {
                logger.debug("mDNS: lost \(service)")
                continuation.yield(.lost(service))
            }
        case .browseFailure(_, let error):
            logger.warning(
                "mDNS: browsing \(options.serviceType) failed (\(AvahiError.text(error))); retrying when the daemon reconnects"
            )
            browsing = false
        case .resolved(_, let resolved):
            session.cancelResolve(resolved.key)
            handleResolved(resolved)
        case .resolveFailure(_, let key, let error):
            session.cancelResolve(key)
            logger.debug("mDNS: could not resolve \(key): \(AvahiError.text(error))")
        }
    }

    private func handleClient(_ status: AvahiClientStatus, error: Int32) {
        switch status {
        case .running:
            if !daemonAvailable {
                daemonAvailable = true
                if reportedUnavailable {
                    logger.notice("mDNS: avahi-daemon is reachable again; publishing and browsing resume")
                }
                reportedUnavailable = false
                continuation.yield(.daemon(available: true))
            }
            publishIfNeeded()
            browseIfNeeded()
        case .connecting:
            markDaemonGone()
            reportUnavailable("no avahi-daemon on the D-Bus system bus")
        case .registering, .collision:
            // The daemon is renaming its host after a host-name conflict: our records
            // are withdrawn and re-published once it is running again.
            if publishedForClient {
                session.withdraw()
                publishedForClient = false
            }
        case .failure:
            markDaemonGone()
            reportUnavailable("lost the avahi-daemon (\(AvahiError.text(error)))")
            reconnect()
        }
    }

    private func handleGroup(_ status: AvahiGroupStatus, error: Int32) {
        switch status {
        case .established:
            logger.info(
                "mDNS: published '\(currentName)' \(options.serviceType) on port \(options.publish.map { String($0.port) }.joined(separator: ", "))"
            )
            continuation.yield(.published(name: currentName))
        case .collision:
            let next = AvahiNames.alternativeServiceName(currentName)
            remoteCaused.note(
                "name_collision",
                level: .notice,
                "mDNS: service name '\(currentName)' is taken on the network; renaming to '\(next)'"
            ) {
                "mDNS: renamed \(LogLimiter.formatted($0)) more times in the last \(LogLimiter.formatted($1)) (service names taken on the network)"
            }
            currentName = next
            publishedForClient = false
            publishIfNeeded()
        case .failure:
            logger.warning(
                "mDNS: publishing '\(currentName)' failed (\(AvahiError.text(error))); retrying when the daemon reconnects"
            )
            publishedForClient = false
        case .uncommitted, .registering:
            break
        }
    }

    private func handleResolved(_ resolved: AvahiResolvedService) {
        let txt = MDNSTXTRecord(strings: resolved.txt)
        let key = resolved.key
        seenInWindow.insert(key)
        if let own = options.ownPeerID, txt.peerID == own {
            logger.trace("mDNS: skipping our own service \(key)")
            return
        }
        if !options.publish.isEmpty, resolved.isLocal, key.name == currentName {
            logger.trace("mDNS: skipping our own service \(key)")
            return
        }
        guard txt.isCompatible else {
            logger.debug(
                "mDNS: skipping \(key): protocol version \(txt.fields[MDNSTXTRecord.versionKey] ?? "?") is not ours"
            )
            return
        }
        let service = MDNSService(
            name: key.name,
            interfaceName: AvahiNames.interfaceName(key.interface) ?? "",
            hostName: resolved.hostName,
            address: resolved.address,
            isIPv6: resolved.isIPv6,
            port: resolved.port,
            txt: txt
        )
        if let old = known[key] {
            if old == service { return }
            continuation.yield(.lost(old))
        }
        known[key] = service
        logger.debug("mDNS: found \(service)")
        continuation.yield(.found(service))
    }

    // MARK: Publishing and browsing

    /// Changes what is published, at run time: withdraws the current service (browsers
    /// see it go away), then publishes `targets` under `serviceName` with `txt`, or
    /// nothing when `targets` is empty (browse only). Browsing is not interrupted. When
    /// the daemon is absent, the change takes effect when it is back.
    ///
    /// `version` orders concurrent changes: a call with a version not above the last
    /// one applied is ignored (it was overtaken by a later change).
    func republish(_ targets: [MDNSPublishTarget], txt: MDNSTXTRecord, serviceName: String, version: Int) {
        guard phase != .stopped, version > republishVersion else { return }
        republishVersion = version
        if publishedForClient {
            session.withdraw()
            publishedForClient = false
        }
        options.publish = targets
        options.txt = txt
        options.serviceName = serviceName
        currentName = serviceName
        logger.debug("mDNS: now publishing \(targets.isEmpty ? "nothing (browse only)" : "'\(serviceName)'")")
        publishIfNeeded()
    }

    private func publishIfNeeded() {
        guard !options.publish.isEmpty, !publishedForClient, daemonAvailable else { return }
        var interfaces: [Int32] = []
        for name in options.interfaces {
            if let index = AvahiNames.interfaceIndex(name) {
                interfaces.append(index)
            } else {
                logger.warning("mDNS: interface '\(name)' does not exist; not publishing on it")
            }
        }
        if !options.interfaces.isEmpty && interfaces.isEmpty {
            logger.warning("mDNS: none of the configured interfaces exists; not publishing")
            return
        }
        let targets = options.publish.map { target -> (proto: Int32, port: UInt16) in
            switch target.family {
            case .ipv4: return (AvahiNames.ipv4, target.port)
            case .ipv6: return (AvahiNames.ipv6, target.port)
            case .any: return (AvahiNames.anyProtocol, target.port)
            }
        }
        for _ in 0..<32 {
            let rc = session.publish(
                name: currentName,
                type: options.serviceType,
                txt: options.txt.strings,
                interfaces: interfaces,
                targets: targets
            )
            if rc == AvahiError.collision {
                let next = AvahiNames.alternativeServiceName(currentName)
                logger.notice("mDNS: service name '\(currentName)' is taken locally; renaming to '\(next)'")
                currentName = next
                continue
            }
            if rc < 0 {
                logger.warning("mDNS: cannot publish '\(currentName)': \(AvahiError.text(rc))")
                return
            }
            publishedForClient = true
            return
        }
    }

    func browseIfNeeded() {
        guard options.browse, !browsing, !browsePaused, daemonAvailable else { return }
        let rc = session.browse(type: options.serviceType)
        if rc < 0 {
            logger.warning("mDNS: cannot browse \(options.serviceType): \(AvahiError.text(rc))")
            return
        }
        browsing = true
    }

    private func isAllowed(_ key: AvahiServiceKey) -> Bool {
        if key.proto == AvahiNames.ipv6 && !options.ipv6 { return false }
        guard !options.interfaces.isEmpty else { return true }
        guard let name = AvahiNames.interfaceName(key.interface) else { return false }
        return options.interfaces.contains(name)
    }
}

#endif
