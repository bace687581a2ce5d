import Foundation
import MeshCore
import MeshStore

extension ControlHandler {
    /// `history`: the newest messages sent and received (for one peer, or all), with
    /// their status, and the outbound counts by status.
    package func history(_ request: MessageQuery) async throws -> HistoryReply {
        var peer: PeerID?
        if request.peer != nil { peer = try await resolveCorrespondent(request.peer, for: "history").0 }
        let limit = try Self.limit(request.limit, default: 100)
        if let grep = request.grep, grep.isEmpty || grep.count > 200 {
            throw MeshError(
                .invalidArgument,
                "\"grep\" must be the text to look for, 1 to 200 characters, got \(grep.count)"
            )
        }
        let entries = try await store.history.entries(peer: peer, matching: request.grep, limit: limit)
        let aliases = try await aliases()
        let names = router.heardNames()
        let counts = try await store.history.statusCounts(peer: peer)
        return HistoryReply(
            messages: entries.map { HistoryMessage($0, alias: aliases[$0.peer], name: names[$0.peer]) },
            outboundCounts: Dictionary(uniqueKeysWithValues: counts.map { ($0.key.name, $0.value) })
        )
    }

    /// `trace`: one message's history entry and trace ("why did my message not arrive").
    package func trace(id text: String?) async throws -> TraceReply {
        guard let text else {
            throw MeshError(
                .invalidArgument,
                "trace needs \"id\": the message ID (32 hex characters) that send printed"
            )
        }
        let id = try await resolveMessageID(text, for: "trace")
        var direction = MessageDirection.outbound
        var entry = try await store.history.entry(id, direction: .outbound)
        if entry == nil {
            direction = .inbound
            entry = try await store.history.entry(id, direction: .inbound)
        }
        guard let entry else {
            throw MessageFailure(
                error: MeshError(
                    .unknownMessage,
                    "this node has no record of message \(id.hex): it neither sent nor received it, or its history was pruned (store.history_limit)"
                ),
                messageID: id
            )
        }
        let trace = try await store.history.trace(of: id, direction: direction)
        let alias = try await store.contacts.contact(peer: entry.peer)?.alias
        let connected = await router.peers().contains { $0.peer == entry.peer && !$0.links.isEmpty }
        return TraceReply(
            message: HistoryMessage(entry, alias: alias, name: router.heardName(of: entry.peer)),
            trace: trace,
            peerConnected: connected
        )
    }

    /// A message named in a request: its 32-hex-character ID, or the unique start (4
    /// or more hex characters, any case) of one in the history, as peers are named.
    /// - Throws: `.invalidArgument` when `text` is neither, or starts several IDs
    ///   (listing them); `.unknownMessage` when a prefix matches no message.
    func resolveMessageID(_ text: String, for command: String) async throws -> MessageID {
        if let id = MessageID(hex: text) { return id }
        let prefix = text.lowercased()
        guard prefix.count >= Self.minimumPeerPrefix, prefix.count < 32, prefix.allSatisfy(\.isHexDigit) else {
            throw MeshError(
                .invalidArgument,
                "\"id\" must be a message ID (32 hex characters, or its first 4 or more), got \"\(text.prefix(80))\""
            )
        }
        let matches = try await store.history.messageIDs(startingWith: prefix)
        guard matches.count <= 1 else {
            let listed = matches.prefix(5).map(\.hex).joined(separator: ", ")
            throw MeshError(
                .invalidArgument,
                "\(command): \"\(prefix)\" is the start of \(matches.count > 5 ? "more than 5" : String(matches.count)) message IDs (\(listed)\(matches.count > 5 ? ", ..." : "")); give more characters"
            )
        }
        guard let id = matches.first else {
            throw MeshError(
                .unknownMessage,
                "no message in this node's history has an ID starting with \"\(prefix)\" (`scmesh history` lists them)"
            )
        }
        return id
    }

    /// `outbox`: what is on its way, for whom, since when, and why it still waits.
    package func outbox(_ request: MessageQuery) async throws -> OutboxReply {
        var peer: PeerID?
        if request.peer != nil { peer = try await resolvePeer(request.peer, for: "outbox").0 }
        let limit = try Self.limit(request.limit, default: 1_000)
        let entries = try await store.history.pending(peer: peer, limit: limit)
        let totals = try await store.history.pendingTotals()
        let aliases = try await aliases()
        let names = router.heardNames()
        // A peer is reachable over a live link or over a route through relays.
        let connected = Set(await router.peers().filter { !$0.links.isEmpty }.map(\.peer))
            .union(await router.routes().map(\.destination))
        let messages = entries.map { entry in
            HistoryMessage(
                entry,
                alias: aliases[entry.peer],
                name: names[entry.peer],
                waitingFor: Self.waitingFor(entry, connected: connected.contains(entry.peer))
            )
        }
        return OutboxReply(messages: messages, total: totals.messages, totalBytes: totals.bytes)
    }

    /// Why a message on its way still waits, in one line.
    static func waitingFor(_ entry: HistoryEntry, connected: Bool) -> String {
        if entry.status == .sent {
            let hop = entry.transport.map { " (over \($0))" } ?? ""
            return "the destination's delivery receipt: the next hop took it\(hop)"
        }
        if !connected {
            let tried =
                entry.attempts == 0 ? "never tried" : "\(entry.attempts) attempt\(entry.attempts == 1 ? "" : "s")"
            let last = entry.reason.map { "; last: \($0)" } ?? ""
            return "a link to the peer: none is up (\(tried)\(last))"
        }
        if let reason = entry.reason {
            return "a retry: the last attempt failed (\(reason))"
        }
        return "its turn: a link or route is up and it is being sent"
    }

    /// Every contact's alias by peer.
    func aliases() async throws -> [PeerID: String] {
        var aliases: [PeerID: String] = [:]
        for contact in try await store.contacts.all() { aliases[contact.peer] = contact.alias }
        return aliases
    }

    /// A request's `limit`, checked.
    static func limit(_ value: Int?, default fallback: Int) throws -> Int {
        guard let value else { return fallback }
        guard value >= 1 else { throw MeshError(.invalidArgument, "\"limit\" must be at least 1, got \(value)") }
        return min(value, 1_000_000)
    }
}
