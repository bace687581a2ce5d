import Logging
import MeshCore
import MeshStore
import ServiceLifecycle
import Synchronization

/// Keeps the store's address ledger and uses it: a `Service` of the node.
///
/// - **Redial at start.** For every peer the ledger says this node reached before, it
///   asks the router to keep a link to the address that last worked, per transport
///   (transports that find peers by discovery — mDNS, BLE — are left to it), so a
///   restarted node finds its peers again without bootstrap config. At most
///   ``maximumRedialPeers`` peers, most recently reached first. The hint carries the
///   peer ID, so the handshake refuses another node that took the address over.
/// - **Record.** A link this node dialled that completes its handshake records a
///   success for its address (`link_up`); a dial that fails or a handshake that fails
///   (`handshake_failed`) records a failure for the peers known at that address.
///   Links a remote dialled are not recorded: their address is the remote's ephemeral
///   port, not one to dial.
/// - **Names.** Every link that comes up records the name its peer claimed in the
///   handshake (none forgets the one kept); at start the kept names are handed to the
///   router, so listings name strangers before they link again.
///
/// MeshCore knows nothing of this: it runs on the router's events and on the dial
/// failures the node's ``LedgerTransport`` wrappers report.
public struct AddressLedgerService: Service {
    /// Dial failures reported by the node's transport wrappers.
    final class Reports: Sendable {
        let stream: AsyncStream<Input>
        let continuation: AsyncStream<Input>.Continuation

        init() {
            (stream, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .bufferingNewest(1024))
        }

        func dialFailed(_ hint: PeerHint, reason: String) {
            continuation.yield(.dialFailed(hint, reason: reason))
        }
    }

    /// What the service reacts to.
    enum Input: Sendable {
        case event(RouterEvent)
        case dialFailed(PeerHint, reason: String)
    }

    /// Most peers redialled at start.
    public static let maximumRedialPeers = 256

    let router: Router
    let ledger: AddressLedger
    /// The transports the node runs that do not discover peers themselves.
    let redialTransports: Set<String>
    let reports: Reports
    let logger: Logger

    /// Runs until the service group shuts down or the task is cancelled.
    public func run() async throws {
        let events = await router.events()
        let names = await restoreNames()
        let known = await redialKnownPeers()
        let continuation = reports.continuation
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { continuation.yield(.event(event)) }
            }
            await cancelWhenGracefulShutdown {
                var index = known
                var recorded = names
                for await input in reports.stream {
                    if Task.isCancelled { break }
                    await handle(input, index: &index, names: &recorded)
                }
            }
            group.cancelAll()
        }
    }

    /// Which peers were reached at which address: `transport address` → peers.
    struct AddressIndex {
        var peers: [String: Set<PeerID>] = [:]

        static func key(_ transport: String, _ address: String) -> String { transport + " " + address }

        mutating func insert(_ peer: PeerID, transport: String, address: String) {
            peers[Self.key(transport, address), default: []].insert(peer)
        }

        func peers(transport: String, address: String) -> Set<PeerID> {
            peers[Self.key(transport, address)] ?? []
        }
    }

    /// Hands the names peers claimed in earlier runs to the router; returns them as
    /// the store holds them.
    private func restoreNames() async -> [PeerID: String] {
        do {
            let names = try await ledger.names()
            router.restoreHeardNames(names)
            return names
        } catch {
            logger.warning(
                "cannot read the peers' names from the store; strangers are named by ID until they link: \(error)"
            )
            return [:]
        }
    }

    /// Asks the router to dial the best known address of each known peer; returns the
    /// index of every known address.
    private func redialKnownPeers() async -> AddressIndex {
        var index = AddressIndex()
        let entries: [LedgerEntry]
        do {
            entries = try await ledger.all()
        } catch {
            logger.warning("cannot read the address ledger; known peers are not redialled: \(error)")
            return index
        }
        var chosen: [String: LedgerEntry] = [:]
        var peers: [PeerID] = []
        for entry in entries {
            index.insert(entry.peer, transport: entry.transport, address: entry.address)
            guard entry.successes > 0, redialTransports.contains(entry.transport) else { continue }
            let key = entry.peer.hex + " " + entry.transport
            // Entries come best first: the first per peer and transport is the one to dial.
            guard chosen[key] == nil else { continue }
            if !peers.contains(entry.peer) {
                guard peers.count < Self.maximumRedialPeers else { continue }
                peers.append(entry.peer)
            }
            chosen[key] = entry
        }
        for entry in chosen.values.sorted(by: { ($0.lastSuccess ?? $0.lastSeen) > ($1.lastSuccess ?? $1.lastSeen) }) {
            await router.connect(
                to: PeerHint(transport: entry.transport, address: entry.address, peerID: entry.peer),
                maxFailures: Router.requestedDialFailureLimit
            )
        }
        if !chosen.isEmpty {
            logger.info(
                "redialling \(peers.count) known peer\(peers.count == 1 ? "" : "s") from the address ledger (\(chosen.count) address\(chosen.count == 1 ? "" : "es"))"
            )
        }
        return index
    }

    /// Updates the ledger for one event or report. `names` holds what the store holds
    /// of the peers' names, so a link that comes up with the name already kept costs
    /// no write.
    private func handle(_ input: Input, index: inout AddressIndex, names: inout [PeerID: String]) async {
        do {
            switch input {
            case .event(let event) where event.kind == .linkUp:
                guard let peer = event.peer, let link = event.link else { return }
                let name = router.heardName(of: peer)
                if name != names[peer] {
                    try await ledger.recordName(name, of: peer)
                    // Bounded as the router's names are: past it, a kept name may be
                    // written once more.
                    if names.count >= PeerNames.maximumPeers { names.removeAll(keepingCapacity: true) }
                    names[peer] = name
                }
                let snapshot = await router.peers().first { $0.peer == peer }?.links.first { $0.id == link.rawValue }
                guard let snapshot, snapshot.outbound else { return }
                index.insert(peer, transport: snapshot.transport, address: snapshot.address)
                try await ledger.recordSuccess(peer: peer, transport: snapshot.transport, address: snapshot.address)
            case .event(let event) where event.kind == .handshakeFailed:
                guard let transport = event.transport, let address = event.address else { return }
                for peer in index.peers(transport: transport, address: address) {
                    try await ledger.recordFailure(peer: peer, transport: transport, address: address)
                }
            case .dialFailed(let hint, let reason):
                var peers = index.peers(transport: hint.transport, address: hint.address)
                if let peer = hint.peerID { peers.insert(peer) }
                for peer in peers {
                    try await ledger.recordFailure(peer: peer, transport: hint.transport, address: hint.address)
                }
                if !peers.isEmpty { logger.debug("dial \(hint) failed: \(reason)") }
            case .event:
                return
            }
        } catch {
            logger.warning("cannot update the address ledger: \(error)")
        }
    }
}
