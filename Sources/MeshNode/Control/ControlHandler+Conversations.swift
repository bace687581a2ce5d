import Foundation
import MeshCore
import MeshStore

extension ControlHandler {
    /// `conversation`: the newest `limit` messages both ways with one peer (default
    /// 100), oldest first.
    package func conversation(_ request: MessageQuery) async throws -> ConversationReply {
        let (peer, alias) = try await resolveCorrespondent(request.peer, for: "conversation")
        let limit = try Self.limit(request.limit, default: 100)
        // Read receipts and invitation acceptances are messages too, not conversation.
        let entries = try await store.history.conversation(with: peer, limit: limit).filter { entry in
            !(entry.text.map {
                ReadReceipts.isReceipt(Array($0.utf8)) || $0.hasPrefix(InvitationAcceptance.magic + "\n")
            } ?? false)
        }
        return ConversationReply(
            peer: peer,
            alias: alias,
            name: router.heardName(of: peer),
            unread: try await store.history.unreadCount(peer: peer),
            messages: entries.map(ConversationReply.Message.init)
        )
    }

    /// `conversations`: every peer with messages in the history, the most recent first.
    package func conversations() async throws -> ConversationsReply {
        let aliases = try await aliases()
        let names = router.heardNames()
        let conversations = try await store.history.conversations().map {
            ConversationsReply.Conversation(
                peer: $0.peer,
                alias: aliases[$0.peer],
                name: names[$0.peer],
                messages: $0.messages,
                unread: $0.unread,
                lastAt: $0.lastAt
            )
        }
        return ConversationsReply(conversations: conversations, unread: conversations.reduce(0) { $0 + $1.unread })
    }

    /// `read`: marks the messages named read, or every unread one (of one peer).
    package func markRead(_ request: ReadRequest) async throws -> ReadReply {
        let ids = request.ids ?? []
        let marked: Int
        if request.all == true {
            guard ids.isEmpty else {
                throw MeshError(.invalidArgument, "read takes message IDs or \"all\", not both")
            }
            var peer: PeerID?
            if request.peer != nil { peer = try await resolveCorrespondent(request.peer, for: "read").0 }
            marked = try await markReadSendingReceipts(nil, peer: peer)
        } else {
            guard !ids.isEmpty else {
                throw MeshError(
                    .invalidArgument,
                    "read needs \"ids\" (message IDs, or their first 4 or more hex characters) or \"all\": true"
                )
            }
            guard request.peer == nil else {
                throw MeshError(.invalidArgument, "read takes \"peer\" only with \"all\": true")
            }
            var resolved: [MessageID] = []
            for text in ids { resolved.append(try await resolveMessageID(text, for: "read")) }
            for id in resolved where try await store.history.entry(id, direction: .inbound) == nil {
                throw MeshError(
                    .unknownMessage,
                    "read: message \(id.hex) was not received by this node (only received messages are read)"
                )
            }
            marked = try await markReadSendingReceipts(resolved, peer: nil)
        }
        return ReadReply(marked: marked, unread: try await store.history.unreadCount())
    }

    /// Marks messages read and, with `messages.read_receipts`, queues a read receipt
    /// to each sender (``ReadReceipts``). Returns how many were unread.
    func markReadSendingReceipts(_ ids: [MessageID]?, peer: PeerID?) async throws -> Int {
        let (count, bySender) = try await store.history.markReadListing(ids, peer: peer)
        guard configuration.messages.readReceipts else { return count }
        for (sender, read) in bySender where sender != router.localPeerID {
            for payload in ReadReceipts.payloads(for: read) {
                _ = try await router.send(to: sender, payload: payload)
            }
        }
        return count
    }

    /// A peer named as ``resolvePeer(_:for:)`` names one, or by the unique start of a
    /// peer ID in the history (a stranger who wrote is in no contact or link list).
    func resolveCorrespondent(_ text: String?, for command: String) async throws -> (PeerID, String?) {
        do {
            return try await resolvePeer(text, for: command)
        } catch let error as MeshError where error.code == .invalidArgument {
            guard let text, text.count >= Self.minimumPeerPrefix, text.count < 64 else { throw error }
            let matches = try await store.history.peers(startingWith: text)
            guard matches.count <= 1 else {
                let listed = matches.prefix(5).map(\.hex).joined(separator: ", ")
                throw MeshError(
                    .invalidArgument,
                    "\(command): \"\(text.lowercased())\" is the start of several peer IDs in the history (\(listed)\(matches.count > 5 ? ", ..." : "")); give more characters"
                )
            }
            guard let peer = matches.first else { throw error }
            return (peer, nil)
        }
    }

    /// `messages` with ``InboxReply/Message/unread`` set on those not yet read.
    func markingUnread(_ messages: [InboxReply.Message]) async throws -> [InboxReply.Message] {
        guard !messages.isEmpty else { return messages }
        let unread = try await store.history.unreadIDs()
        return messages.map { message in
            var message = message
            message.unread = unread.contains(message.id) ? true : nil
            return message
        }
    }

    /// `history_clear`: deletes the finished history of one peer, or all of it.
    package func historyClear(peer text: String?) async throws -> ClearReply {
        var peer: PeerID?
        if text != nil { peer = try await resolveCorrespondent(text, for: "history_clear").0 }
        return ClearReply(deleted: try await store.history.clear(peer: peer))
    }

    /// `inbox_delete`: deletes one inbox entry, named by its sequence number or by its
    /// message ID (or the unique start of one, as every message ID is taken).
    package func inboxDelete(seq: Int?, id text: String? = nil) async throws -> ClearReply {
        var seq = seq
        if let text {
            guard seq == nil else {
                throw MeshError(.invalidArgument, "inbox_delete takes \"seq\" or \"id\", not both")
            }
            let id = try await resolveMessageID(text, for: "inbox_delete")
            guard let held = try await inbox.sequence(of: id) else {
                throw MeshError(
                    .invalidArgument,
                    "the inbox holds no message \(id.hex) (it was removed, or this node sent it); list them with inbox"
                )
            }
            seq = held
        }
        guard let seq else {
            throw MeshError(
                .invalidArgument,
                "inbox_delete needs \"seq\" (the sequence number `scmesh inbox` shows) or \"id\" (a message ID, or its first 4 or more hex characters)"
            )
        }
        guard try await inbox.delete(sequence: seq) else {
            throw MeshError(
                .invalidArgument,
                "the inbox holds no message with sequence number \(seq) (it was removed, or never arrived); list them with inbox"
            )
        }
        return ClearReply(deleted: 1)
    }
}
