import Logging

/// Address exchange and transport upgrade (docs/PROTOCOL.md §A.8): each end of a new
/// link sends a signed record of where else it listens; a receiver that runs one of
/// those transports, ranked above every link it has to the peer, dials it there. The
/// routing policy then prefers the new link, so traffic moves up; what was in flight
/// on the old link is acknowledged there or escalates, and the receiver's duplicate
/// checks keep it from arriving twice.
extension LinkManager {
    /// Address records one link may bring that are acted on; more are ignored.
    static let addressRecordsPerLink = 4

    /// Hosts that mean "every interface": not an address a peer can dial.
    private static func isUnspecified(_ address: String) -> Bool {
        ["0.0.0.0:", "[::]:", ":::"].contains { address.hasPrefix($0) } || address == "0.0.0.0" || address == "::"
    }

    /// The addresses this node's running transports listen on, in transport order.
    var listeningEntries: [AddressesFrame.Entry] {
        transportStatus.filter { $0.state == .running }.flatMap { status in
            status.addresses.filter { !Self.isUnspecified($0) }.map {
                AddressesFrame.Entry(transport: status.name, address: $0)
            }
        }
    }

    /// Queues this node's signed address record on a link that just came up.
    func sendAddresses(on session: LinkSession) {
        guard let signer = announcer.signer else { return }
        let entries = listeningEntries
        guard !entries.isEmpty else { return }
        addressSequence &+= 1
        session.queueAddresses(
            AddressesFrame.originate(peer: localPeerID, sequence: addressSequence, entries: entries, signer: signer)
        )
    }

    /// Takes an address record that arrived on `session`: checked here, acted on by
    /// the actor.
    nonisolated func acceptAddresses(_ record: AddressesFrame, from session: LinkSession) {
        func reject(_ reason: String, _ detail: String) {
            stats.update { $0.addressRecordsRejected[reason, default: 0] += 1 }
            logger.trace("address record from \(session.remote) ignored (\(reason)): \(detail)")
        }
        guard session.takeInboundAddresses(limit: Self.addressRecordsPerLink) else {
            return reject("rateLimited", "more than \(Self.addressRecordsPerLink) on one link")
        }
        guard let signer = announcer.signer else { return reject("noVerifier", "this router has no identity signer") }
        guard record.peer == session.remote else {
            return reject("notFromRemote", "it is about \(record.peer), not the link's remote")
        }
        guard record.verify(with: signer) else { return reject("badSignature", "not signed by \(record.peer)") }
        stats.update { $0.addressRecordsAccepted += 1 }
        spawn { await self.considerUpgrade(record) }
    }

    /// Dials the peer over each advertised transport this node runs that ranks above
    /// (a lower priority number than) every link it has to the peer, unless a link or
    /// a dial over it is already there.
    private func considerUpgrade(_ record: AddressesFrame) {
        let sessions = table.sessions(to: record.peer)
        guard let best = sessions.map(\.priority).min() else { return }
        var dialled: Set<String> = []
        for entry in record.entries {
            guard let local = transports[entry.transport], local.status.state == .running, local.priority < best,
                !sessions.contains(where: { $0.transport == entry.transport }), !dialled.contains(entry.transport),
                AddressFamily.admits(entry.address, listeningOn: local.status.addresses)
            else { continue }
            dialled.insert(entry.transport)
            stats.update { $0.upgradeDials += 1 }
            logger.info(
                "\(record.peer) is also reachable over \(entry.transport) at \(entry.address), ranked above its current link: dialling it there"
            )
            connect(
                to: PeerHint(transport: entry.transport, address: entry.address, peerID: record.peer),
                maxFailures: Router.requestedDialFailureLimit
            )
        }
    }
}
