// Switching transports off and on, and dialling an address, while the router runs.
extension Router {
    /// Adds a transport that starts switched off (state `disabled`), to be switched on
    /// with ``enableTransport(_:)``: a transport a user disabled before a restart.
    public func addDisabled(_ transport: any Transport, priority: Int) async {
        await links.add(transport, priority: priority, enabled: false)
    }

    /// Switches a transport off while the router runs: it stops listening and
    /// discovering, its links close and its peers' addresses on it are not dialled;
    /// ``transportStatus()`` shows it `disabled`. Returns once it has stopped.
    /// - Throws: ``MeshError`` `.invalidArgument` naming the router's transports when
    ///   none has that name.
    public func disableTransport(named name: String) async throws(MeshError) {
        try await links.disable(name)
    }

    /// Switches a disabled transport on again. A transport's `listen` runs once per
    /// instance, so this takes a new instance of it (the same ``Transport/name``),
    /// which runs in place of the old one; the addresses known on it are dialled again.
    /// Enabling a transport that is not disabled changes nothing.
    /// - Throws: ``MeshError`` `.invalidArgument` naming the router's transports when
    ///   none has that name.
    public func enableTransport(_ transport: any Transport) async throws(MeshError) {
        try await links.enable(transport)
    }

    /// Paces discovery, keepalives and route summaries at run time (a power profile
    /// changed): each transport gets ``Transport/apply(_:)``, a transport started later
    /// gets it first, every link pings at ``TransportPacing/keepaliveInterval`` (never
    /// more often than `keepalive_interval_ms`), and route summaries back off from
    /// ``TransportPacing/routeSummaryInterval`` (never below `summary_interval_ms`), and
    /// the topic heartbeat ticks at ``TransportPacing/topicHeartbeatInterval`` (never
    /// more often than `topics.heartbeat_interval_ms`).
    /// ``TransportPacing/configured`` goes back to the configured values.
    public func setPacing(_ pacing: TransportPacing) async {
        announcer.summaryInterval.set(pacing.routeSummaryInterval)
        gossip.heartbeatInterval.set(pacing.topicHeartbeatInterval)
        await links.setPacing(pacing)
    }

    /// The pacing in force (``setPacing(_:)``).
    public func pacing() async -> TransportPacing {
        await links.pacing
    }

    /// Whether the transport named is switched off (``disableTransport(named:)``).
    public func isTransportDisabled(_ name: String) async -> Bool {
        await links.transportStatus.first { $0.name == name }?.state == .disabled
    }

    /// Dials `hint` now and returns the peer once its link is authenticated. The
    /// address is then kept like one given on request: redialled when the link drops,
    /// dropped after ``requestedDialFailureLimit`` failures spanning
    /// ``requestedDialPersistence``.
    /// - Parameter timeout: how long the dial and the handshake may take together.
    /// - Throws: ``MeshError``: `.invalidArgument` (no such transport, or it is disabled
    ///   or not running), `.dialFailed` (nothing answered, with the transport's
    ///   reason), `.handshakeFailed`, `.timedOut`, `.notRunning`.
    public func dial(_ hint: PeerHint, timeout: Duration) async throws -> PeerID {
        try await links.dialNow(hint, timeout: timeout)
    }
}
