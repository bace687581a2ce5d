import Foundation
import MeshCore
import MeshStore

extension ControlHandler {
    /// `transports`, `transports_disable`, `transports_enable`: every transport and its
    /// state, after switching one off or on (kept across restarts, ``SavedSettings``).
    package func transports(_ request: TransportsRequest) async throws -> TransportsReply {
        var changed: String?
        switch request {
        case .list:
            break
        case .disable(let name), .enable(let name):
            guard let name, !name.isEmpty else {
                throw MeshError(
                    .invalidArgument,
                    "\(request.name) needs \"transport\": the transport's name (this node's transports: \(transportNames))"
                )
            }
            guard let transportControl else {
                throw MeshError(.invalidArgument, "this node cannot switch its transports at run time")
            }
            if case .disable = request {
                try await transportControl.disable(name)
                changed =
                    "transport \(name) disabled (kept across restarts; scmesh transports enable \(name) starts it)"
            } else {
                try await transportControl.enable(name)
                changed = "transport \(name) enabled"
            }
        }
        return TransportsReply(
            transports: await router.transportStatus(),
            disabled: try SavedSettings.load(dataDirectory: dataDirectory).disabledTransports ?? [],
            changed: changed
        )
    }

    private var transportNames: String {
        let names = liveTransports.map(\.name)
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }

    /// The longest a `dial` may wait for its link.
    static let maximumDialSeconds = 300.0

    /// `dial`: dials the address now; replies once the link is authenticated (its
    /// address is then in the ledger, and redialled when the link drops).
    /// - Throws: one line naming what is wrong: the transport, the address, the
    ///   timeout, or why the dial or the handshake failed.
    package func dial(_ request: DialRequest) async throws -> DialReply {
        guard let transport = request.transport, !transport.isEmpty else {
            throw MeshError(
                .invalidArgument,
                "dial needs \"transport\" (this node's transports: \(transportNames)) and \"address\""
            )
        }
        guard let address = request.address?.trimmingCharacters(in: .whitespaces), !address.isEmpty else {
            throw MeshError(.invalidArgument, "dial needs \"address\", e.g. 192.0.2.7:7420 for tcp")
        }
        let seconds = request.timeoutSeconds ?? 15
        guard seconds > 0, seconds <= Self.maximumDialSeconds else {
            throw MeshError(
                .invalidArgument,
                "\"timeout_seconds\" must be above 0 and at most \(Int(Self.maximumDialSeconds)), got \(seconds)"
            )
        }
        let peer = try await router.dial(
            PeerHint(transport: transport, address: address),
            timeout: .milliseconds(Int64(seconds * 1000))
        )
        return DialReply(
            peer: peer,
            alias: try? await aliases()[peer],
            name: router.heardName(of: peer),
            transport: transport,
            address: address
        )
    }

    /// `known_peers`: the address ledger, best address first.
    package func knownPeers() async throws -> KnownPeersReply {
        let entries = try await store.ledger.all()
        let aliases = (try? await aliases()) ?? [:]
        let live = Set(await router.peers().map(\.peer))
        let names = router.heardNames()
        return KnownPeersReply(
            known: entries.map { entry in
                KnownPeersReply.Entry(
                    peer: entry.peer,
                    alias: aliases[entry.peer],
                    name: names[entry.peer],
                    transport: entry.transport,
                    address: entry.address,
                    successes: entry.successes,
                    failures: entry.failures,
                    lastSeen: entry.lastSeen,
                    lastSuccess: entry.lastSuccess,
                    connected: live.contains(entry.peer)
                )
            }
        )
    }
}
