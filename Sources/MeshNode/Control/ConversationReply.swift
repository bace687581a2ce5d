import Foundation
import MeshCore
import MeshStore

/// The reply to `conversation`: the messages both ways with one peer, oldest first.
public struct ConversationReply: Codable, Sendable, Hashable {
    /// One message of a conversation.
    public struct Message: Codable, Sendable, Hashable {
        /// The message ID (`message_id`; formerly `id`, still written, deprecated).
        public var id: MessageID
        /// `in` (received from the peer) or `out` (sent to it).
        public var direction: String
        /// When it was sent (queued) or received (`created_at`, as in `history`;
        /// formerly `at`, still written, deprecated).
        public var at: Date
        /// Its status: `received` for an inbound one; `queued`, `sent`, `delivered`,
        /// `failed` or `expired` for an outbound one.
        public var status: String
        /// The payload as text, when it is UTF-8 and under 64 KiB.
        public var text: String?
        /// When ``text`` is absent: the base64 of the payload's first 1 KiB.
        public var headBase64: String?
        /// Payload size in bytes.
        public var bytes: Int
        /// Inbound only: true while it is unread.
        public var unread: Bool?
        /// Why it failed or expired (or why its last attempt did not go through).
        public var reason: String?

        /// The conversation form of a history entry.
        public init(_ entry: HistoryEntry) {
            id = entry.id
            direction = entry.direction == .inbound ? "in" : "out"
            at = entry.createdAt
            status = entry.status.name
            text = entry.text
            headBase64 = entry.headBase64
            bytes = entry.bytes
            unread = entry.unread
            reason = entry.reason
        }

        enum CodingKeys: String, CodingKey {
            case id = "messageID"
            case at = "createdAt"
            case direction, status, text, headBase64, bytes, unread, reason
        }
    }

    /// The peer.
    public var peer: PeerID
    /// Its alias, when it is a contact.
    public var alias: String?
    /// The name it claimed in its last handshake with this node (its `node.name`):
    /// self-chosen and not unique; absent when none was heard.
    public var name: String? = nil
    /// Its received messages not yet read.
    public var unread: Int
    /// The messages, oldest first (the newest `limit`).
    public var messages: [Message]

    enum CodingKeys: String, CodingKey {
        case peer, alias, name, unread, messages
    }

    /// Encodes the messages with their former field names too.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(peer, forKey: .peer)
        try container.encodeIfPresent(alias, forKey: .alias)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(unread, forKey: .unread)
        try container.encode(messages.withDeprecatedNames, forKey: .messages)
    }
}

extension ConversationReply.Message: DeprecatedFieldNames {
    /// `id` and `at`, the former names of `message_id` and `created_at`.
    public var deprecatedFields: [(name: String, value: (any Encodable)?)] { [("id", id), ("at", at)] }
}

/// The reply to `conversations`: every peer this node exchanged messages with.
public struct ConversationsReply: Codable, Sendable, Hashable {
    /// One conversation.
    public struct Conversation: Codable, Sendable, Hashable {
        /// The peer.
        public var peer: PeerID
        /// Its alias, when it is a contact.
        public var alias: String?
        /// The name it claimed in its last handshake with this node (its `node.name`):
        /// self-chosen and not unique; absent when none was heard.
        public var name: String? = nil
        /// Messages both ways that the history keeps.
        public var messages: Int
        /// Received messages not yet read.
        public var unread: Int
        /// When the newest message was sent or received.
        public var lastAt: Date
    }

    /// The conversations, the most recent first.
    public var conversations: [Conversation]
    /// Received messages not yet read, in all.
    public var unread: Int
}

/// The reply to `read`: how many messages it marked read and how many stay unread.
public struct ReadReply: Codable, Sendable, Hashable {
    /// Messages that were unread and now are read.
    public var marked: Int
    /// Received messages still unread.
    public var unread: Int
}

/// The reply to `history_clear` and `inbox_delete`: how many entries went.
public struct ClearReply: Codable, Sendable, Hashable {
    /// Entries deleted.
    public var deleted: Int
}
