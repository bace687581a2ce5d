import Logging
import Synchronization

extension LinkManager {
    /// Runs the handshake on a link, registers it and serves it until it ends.
    /// - Returns: the remote's peer ID when the handshake succeeded.
    @discardableResult
    func serve(
        link: any Link,
        id: LinkID,
        role: HandshakeRole,
        transport name: String,
        hint: PeerHint?,
        outcome: DialOutcome? = nil
    ) async -> PeerID? {
        defer {
            forgetPending(id)
            outcome?.finish()
        }
        guard let priority = priority(of: name), let capabilities = capabilities(of: name) else {
            await link.close()
            return nil
        }
        let context = HandshakeContext(
            transportName: name,
            remoteAddress: link.remoteAddress,
            expectedPeer: hint?.peerID,
            capabilities: configuration.features,
            localName: announcedName.withLock { $0 }
        )
        let secure: SecureSession
        do {
            secure = try await handshake(link: link, id: id, role: role, context: context)
            if secure.remotePeerID == localPeerID {
                throw MeshError(.handshakeFailed, "the remote is this node itself")
            }
            if wasEvicted(id) {
                // Evicted in the instant before its handshake finished: the link is closed.
                throw MeshError(.linkClosed, "evicted as the handshake finished")
            }
            // Authenticated: out of the budget of unauthenticated links at once.
            forgetPending(id)
        } catch {
            if wasEvicted(id) {
                // Counted as an eviction; one stranger's idle connection is not news.
                await link.close()
                return nil
            }
            let meshError = error as? MeshError
            let code = (meshError?.cause as? MeshError)?.code.name ?? meshError?.code.name ?? "other"
            stats.update { stats in
                stats.handshakeFailures += 1
                stats.handshakeFailuresByReason[code, default: 0] += 1
            }
            let reason = meshError?.message ?? "\(error)"
            remoteLog.note(
                "handshake_failed.\(code)",
                level: .info,
                "handshake over \(name) with \(link.remoteAddress) failed: \(reason)"
            ) {
                "\(LogLimiter.formatted($0)) more handshakes failed in the last \(LogLimiter.formatted($1)): \(code)"
            }
            bus.emit(.handshakeFailed(transport: name, address: link.remoteAddress, reason: reason))
            outcome?.yield(.failure(MeshError(.handshakeFailed, "the handshake failed: \(reason)")))
            await link.close()
            return nil
        }
        guard runState == .running, transports[name]?.disabled != true else {
            await link.close()
            return nil
        }
        let session = LinkSession(
            link: link,
            id: id,
            transport: name,
            priority: priority,
            capabilities: capabilities,
            remote: secure.remotePeerID,
            role: role,
            cipher: secure.cipher,
            remoteVersion: secure.remoteVersion,
            remoteCapabilities: secure.remoteCapabilities,
            configuration: configuration,
            keepalive: keepalive,
            clock: clock,
            stats: stats,
            logger: logger
        )
        peerNames.heard(secure.remoteName, from: secure.remotePeerID)
        let registered = await register(session)
        // A duplicate lost the tie-break to a link that is up: the peer is linked either way.
        outcome?.yield(.success(secure.remotePeerID))
        guard registered else { return secure.remotePeerID }
        let inbound = self.inbound
        let announcer = self.announcer
        let gossip = self.gossip
        let reason = await session.run(
            LinkSession.Handlers(
                deliver: { frame, session in await inbound.accept(frame, from: session) },
                announce: { frame, session in announcer.accept(frame, from: session) },
                addresses: { record, session in self.acceptAddresses(record, from: session) },
                topic: { frame, session in await gossip.accept(frame, from: session) },
                onMalformed: { error in self.noteMalformed(error, session: session) }
            )
        )
        if session.endedByWriteStall.load(ordering: .relaxed) {
            stats.update { $0.writeStalledLinksClosed += 1 }
        }
        unregister(session, reason: reason)
        return secure.remotePeerID
    }

    private func handshake(
        link: any Link,
        id: LinkID,
        role: HandshakeRole,
        context: HandshakeContext
    ) async throws -> SecureSession {
        let security = self.security
        let channel = LinkHandshakeChannel(link: link) { [self] in
            _ = handshakeProgress.withLock { $0.heard.insert(id) }
        }
        let timeout = configuration.handshakeTimeout
        let clock = self.clock
        return try await withThrowingTaskGroup(of: SecureSession?.self) { group in
            // The handshake reads and writes the link: on its executor, as the session.
            group.addTask(executorPreference: link.preferredTaskExecutor) {
                let session = try await security.handshake(role: role, channel: channel, context: context)
                _ = self.handshakeProgress.withLock { $0.done.insert(id) }  // out of the eviction's reach
                return session
            }
            group.addTask {
                try await clock.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let session = first else {
                await link.close()
                throw MeshError(.handshakeFailed, "no handshake from \(context.remoteAddress) within \(timeout)")
            }
            return session
        }
    }

    /// Adds a session to the link table, closing the loser of a duplicate pair.
    private func register(_ session: LinkSession) async -> Bool {
        let peer = session.remote
        switch table.register(session) {
        case .duplicate:
            stats.update { $0.duplicateLinksClosed += 1 }
            logger.debug("closing duplicate \(session.transport) link \(session.id) to \(peer)")
            await session.close(MeshError(.linkClosed, "duplicate link"))
            return false
        case .replaced(let old):
            stats.fold(old.data, transport: old.transport)
            stats.update { $0.duplicateLinksClosed += 1 }
            logger.debug("closing duplicate \(old.transport) link \(old.id) to \(peer)")
            await old.close(MeshError(.linkClosed, "replaced by a newer link"))
        case .added:
            break
        }
        stats.update { stats in
            stats.linksOpened += 1
            stats.transports[session.transport, default: .init()].linksOpened += 1
        }
        let features = session.remoteCapabilities.names
        let claimed = peerNames.name(of: peer).map { ", claims the name \"\($0)\"" } ?? ""
        logger.info(
            "link \(session.id) up to \(peer) over \(session.transport) (\(session.link.remoteAddress)), wire version \(session.remoteVersion), features: \(features.isEmpty ? "none (minimal profile)" : features.joined(separator: ", "))\(claimed)"
        )
        bus.emit(.linkUp(peer: peer, transport: session.transport, link: session.id))
        sendAddresses(on: session)
        linkCameUp(peer)
        return true
    }

    private func unregister(_ session: LinkSession, reason: String) {
        guard table.remove(session) else { return }
        if table.sessions(to: session.remote).isEmpty {
            announcer.neighbourLost(session.remote)
            gossip.neighbourLost(session.remote)
        }
        stats.fold(session.data, transport: session.transport)
        stats.update { $0.linksClosed += 1 }
        logger.info("link \(session.id) to \(session.remote) over \(session.transport) down: \(reason)")
        bus.emit(.linkDown(peer: session.remote, transport: session.transport, link: session.id, reason: reason))
    }

    private nonisolated func noteMalformed(_ error: MeshError, session: LinkSession) {
        let code = error.code.name
        stats.update { $0.malformedInputs[code, default: 0] += 1 }
        remoteLog.note(
            "malformed.\(code)",
            "closing \(session.transport) link \(session.id) to \(session.remote): \(error.message)"
        ) {
            "closed \(LogLimiter.formatted($0)) more links on malformed input in the last \(LogLimiter.formatted($1)): \(code)"
        }
        bus.emit(.malformedInput(transport: session.transport, peer: session.remote, reason: error.message))
    }
}
