import Logging

extension DeliveryPipeline {
    /// How a message goes out by flooding (docs/PROTOCOL.md §A.9).
    enum FloodStep {
        /// This node starts the flood of its copy (its own message or receipt with no
        /// route, an emergency) and keeps the copy until a route to the destination
        /// appears: the flood is a fallback, custody stays here.
        case start
        /// As ``start``, for a message whose route keeps failing: a flood through
        /// (flag `0x0010`), which no relay's route stops.
        case startThrough
        /// A flood copy taken from a neighbour: re-broadcast once (unless suppressed),
        /// then custody has passed on.
        case relay
    }

    /// Whether `message` goes out by flooding now, and how; nil to send it by its route
    /// (or to wait for one).
    func floodStep(for message: OutboundMessage, hop: PeerID?) async -> FloodStep? {
        let flags = message.flags
        // A direct link to the destination beats any flood.
        if hop == message.destination { return nil }
        // Flooded by this node already: from now on only a route carries it.
        if flags & DataFrame.floodStartedLocalFlag != 0 { return nil }
        let emergency = flags & DataFrame.emergencyFlag != 0
        if flags & DataFrame.floodFlag != 0, message.isRelayed {
            // A flood copy from a neighbour: by route when this node has one (the flood
            // stops spreading where routes are known), except emergencies and floods
            // started because a route kept failing.
            return hop == nil || emergency || flags & DataFrame.floodThroughFlag != 0 ? .relay : nil
        }
        if emergency { return .start }
        guard configuration.flood.enabled else { return nil }
        if hop == nil { return .start }
        let limit = configuration.flood.afterFailedAttempts
        if limit > 0, let record = await queue.record(message.id), record.attempts > limit {
            // The route keeps failing (e.g. its next hop refuses the message as a loop):
            // flood it once, past every route, rather than hold it for ever.
            return .startThrough
        }
        return nil
    }

    /// Sends the messages waiting for `peer` that may be flooded (no route to it is
    /// known): those not yet flooded by this node, oldest (emergencies first).
    func drainFloods(to peer: PeerID) async {
        for id in await queue.waiting(for: peer) {
            guard !Task.isCancelled, let record = await queue.record(id) else { return }
            let flags = record.flags
            if flags & DataFrame.floodStartedLocalFlag != 0 { continue }
            let floodable = flags & (DataFrame.floodFlag | DataFrame.emergencyFlag) != 0 || configuration.flood.enabled
            guard floodable else { continue }
            guard !table.peers.isEmpty else {
                flood.noteWaiting(id, for: peer)
                continue
            }
            guard let message = await queue.claim(id) else { continue }
            await transmitOrRequeue(message)
        }
    }

    /// Sends a flood: to every neighbour but those that offered it (they hold it), in
    /// parallel; succeeds when one of them took it.
    func transmitFlood(_ message: OutboundMessage, _ step: FloodStep) async throws {
        let id = message.id
        // A flood copy that also carries a hop's custody is kept like a flood this node
        // started: never released without being handed on. `custody` is the TTL that
        // custody came with, once it has come.
        var custody = step == .relay ? flood.takeCustody(id) : nil
        var step = custody != nil ? .start : step
        let peer = message.destination
        // Kept here until a route appears: ask for one (a copy only passed on asks
        // nothing).
        if step != .relay, !hasRoute(to: peer) { routeWanted(peer) }
        // Emergencies and floods past failing routes go everywhere: a neighbour that
        // offered one may hold it only to send it back along its route.
        let everywhere = message.flags & (DataFrame.emergencyFlag | DataFrame.floodThroughFlag) != 0
        if step == .relay, !everywhere, flood.shouldSuppress(id) {
            switch flood.beginRelease(id) {
            case .custody(let ttl):
                custody = ttl
                step = .start  // custody came with an ordinary copy meanwhile
            case .begun:
                let count = flood.offered(id).count
                stats.update { $0.flood.suppressed += 1 }
                let reason = "re-broadcast suppressed: \(count) neighbours offered it already"
                await update(message, to: .relayed, transport: nil, reason: reason)
                flood.endRelease(id)
                bus.emit(.message(.messageFlooded, id: id, peer: peer, reason: reason))
                return
            }
        }
        var out = message
        if out.flags & DataFrame.sealedFlag == 0 { out = try await sealForRelay(out) }
        out.flags |= DataFrame.floodFlag
        let through = step == .startThrough
        if through { out.flags |= DataFrame.floodThroughFlag }
        if step != .relay {
            // A flood past failing routes gets the whole flood radius: the loop it
            // escapes may have used up the message's own TTL.
            out.ttl =
                message.isRelayed && !through
                ? min(message.ttl ?? configuration.flood.ttl, configuration.flood.ttl) : configuration.flood.ttl
        }
        var skip = flood.offered(id)
        skip.insert(localPeerID)
        if let origin = message.origin { skip.insert(origin) }
        let targets = table.peers.filter { !skip.contains($0) }
        guard !targets.isEmpty else {
            if step == .relay, flood.beginRelease(id) == .begun {
                let reason = "every neighbour offered it already"
                stats.update { $0.flood.covered += 1 }
                await update(message, to: .relayed, transport: nil, reason: reason)
                flood.endRelease(id)
                return
            }
            flood.noteWaiting(id, for: peer)
            throw MeshError(.noRoute, "no neighbour to flood message \(id.hex) to; it waits for a link")
        }
        let frameMessage = out
        stats.update { $0.flood.transmissions += targets.count }
        let taken = await withTaskGroup(of: String?.self) { group in
            for target in targets {
                group.addTask { try? await self.transmitChunks(of: frameMessage, via: target) }
            }
            var used: [String] = []
            for await transport in group { if let transport { used.append(transport) } }
            return used
        }
        guard let transport = taken.first else {
            throw MeshError(
                .deliveryFailed,
                "no neighbour took flooded message \(id.hex) (\(targets.count) tried); it stays queued"
            )
        }
        let reason = "flooded to \(taken.count) of \(targets.count) neighbours"
        bus.emit(.message(.messageFlooded, id: id, peer: peer, transport: transport, reason: reason))
        // A hop's custody may have come with an ordinary copy while the neighbours took
        // this one (they may hold it only as a flood copy, or have let theirs go): then
        // it is kept like a flood this node started, never released.
        if step == .relay, case .custody(let ttl) = flood.beginRelease(id) {
            custody = ttl
            step = .start
        }
        switch step {
        case .relay:
            stats.update {
                $0.messagesRelayed += 1
                $0.bytesRelayed += message.payload.count
            }
            await update(message, to: .relayed, transport: transport, reason: reason)
            flood.endRelease(id)
        case .start, .startThrough:
            stats.update { $0.flood.started += 1 }
            // Its own copies coming back are duplicates from now on.
            _ = try? await flood.seen.insert(id)
            do {
                try await queue.replacePayload(
                    id,
                    with: out.payload,
                    flags: out.flags | DataFrame.floodStartedLocalFlag,
                    ttl: custody.map { Self.custodyTTL($0, of: message) }
                )
            } catch {
                logger.debug("flooded message \(id.hex) could not be marked as flooded: \(error)")
            }
            // Custody stays here: the copy waits for a route (or the receipt).
            await update(
                message,
                to: .queued,
                transport: transport,
                reason: "\(reason); kept until a route to \(peer) appears"
            )
            // A route that appeared while the copy was out (claimed) drained nothing
            // for it: look again now that it waits.
            if hasRoute(to: peer) { scheduler.schedule(.drain(peer)) }
        }
    }
}
