import DequeModule
import Synchronization

extension GossipRouter {
    /// One heartbeat: expire old state, repeat recent announcements, keep each mesh
    /// between D_low and D_high, and send IHAVE with the recent message IDs to every
    /// mesh peer and up to D_lazy neighbours outside the mesh (each without the IDs it
    /// showed it holds).
    func heartbeat() {
        let now = clock.now
        let outbox = state.withLock { state -> Outbox in
            state.heartbeats += 1
            expire(&state, now: now)
            var outbox: Outbox = []
            // Announcements made since the last heartbeat go out again (first).
            for (peer, topics) in state.repeats {
                for (topic, pending) in topics {
                    outbox.append((peer, pending.frame))
                    state.repeats[peer]?[topic] = pending.left > 1 ? (pending.frame, pending.left - 1) : nil
                }
                if state.repeats[peer]?.isEmpty ?? false { state.repeats[peer] = nil }
            }
            outbox += reconcile(&state, now: now)
            let backoffSeconds = pruneBackoffSeconds
            for (topic, mesh) in state.mesh where mesh.count > configuration.meshDegreeHigh {
                let excess = mesh.shuffled().prefix(mesh.count - configuration.meshDegree)
                for peer in excess {
                    state.mesh[topic]?.remove(peer)
                    state.backoff[topic, default: [:]][peer] = now + configuration.pruneBackoff
                    outbox.append(
                        (
                            peer,
                            .topicControl(TopicControlFrame(topic: topic, body: .prune(backoffSeconds: backoffSeconds)))
                        )
                    )
                }
            }
            let since = state.heartbeats - configuration.gossipWindow
            for (topic, mesh) in state.mesh {
                // Mesh peers too: pushes are not acknowledged, so a push lost on a
                // lossy link is made good from the same neighbour.
                let outside = candidates(topic, state, now: now).filter { !mesh.contains($0) }
                let inside = configuration.gossipToMesh ? Array(mesh) : []
                for peer in inside + outside.shuffled().prefix(configuration.gossipDegree) {
                    outbox += offer(topic, to: peer, state, since: since)
                }
            }
            return outbox
        }
        send(outbox)
    }

    /// Forgets expired seen IDs, cached messages, backoffs, penalties and IWANTs.
    private func expire(_ state: inout State, now: ContinuousClock.Instant) {
        while let oldest = state.cacheOrder.first {
            guard let cached = state.cache[oldest] else {
                state.cacheOrder.removeFirst()
                continue
            }
            guard now - cached.receivedAt > configuration.cacheDuration else { break }
            state.cacheOrder.removeFirst()
            state.cache[oldest] = nil
        }
        state.seen = state.seen.filter { $0.value > now }
        state.seenOrder.removeAll { state.seen[$0] == nil }
        state.requested = state.requested.filter { $0.value > now }
        for topic in state.backoff.keys {
            state.backoff[topic] = state.backoff[topic]?.filter { $0.value > now }
        }
        let cache = state.cache
        for peer in Array(state.peers.keys) {
            guard var info = state.peers[peer] else { continue }
            if let until = info.ignoredUntil, until <= now { info.ignoredUntil = nil }
            info.served = info.served.filter { cache[$0.key] != nil }
            info.holds = info.holds.filter { cache[$0] != nil }
            state.peers[peer] = info
        }
    }
}
