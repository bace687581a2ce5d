import Foundation
import MeshCore

/// The reply to `inbox`.
public struct InboxReply: Codable, Sendable, Hashable {
    /// One received message. With payloads (the default) it carries the payload whole,
    /// as ``payloadBase64`` and, when it is UTF-8, as ``text``. Without (`"payloads":
    /// false`) it carries ``bytes`` and only what the node has at hand: ``text`` when
    /// the payload is UTF-8 and kept in the store's row (under
    /// `store.inbox_file_threshold_bytes`) or no longer than ``InboxReply/headBytes``,
    /// else ``headBase64``, its first bytes.
    public struct Message: Codable, Sendable, Hashable {
        /// Its sequence number in the inbox (pass it as `after` to poll for newer ones).
        public var seq: Int
        /// The message ID (`message_id`; formerly `id`, still written, deprecated).
        public var id: MessageID
        /// The sender (`peer`; formerly `from`, still written, deprecated).
        public var from: PeerID
        /// The transport it arrived on.
        public var transport: String
        /// When the node received it (ISO 8601).
        public var receivedAt: Date
        /// When the sender sealed it (ISO 8601), as its end-to-end envelope says;
        /// absent when it came unsealed over a direct link or the envelope holds no
        /// time. A message that waited at its sender or a relay was sealed: its
        /// `sent_at` is when it was sent, `received_at` when it arrived.
        public var sentAt: Date? = nil
        /// Payload size in bytes.
        public var bytes: Int
        /// The payload as text when it is valid UTF-8 (without payloads: only when it
        /// is also kept in the store's row, under `store.inbox_file_threshold_bytes`, or
        /// no longer than ``InboxReply/headBytes``).
        public var text: String?
        /// The payload, base64; nil in a reply without payloads (`"payloads": false`).
        public var payloadBase64: String?
        /// Without payloads, when ``text`` is absent: the base64 of the payload's first
        /// ``InboxReply/headBytes`` bytes (all of it when shorter), for a preview; nil
        /// otherwise.
        public var headBase64: String?
        /// The topic of a topic message; absent for a direct message.
        public var topic: String?
        /// True when its origin sent it as an emergency; absent otherwise.
        public var emergency: Bool?
        /// The sender's alias when it is a contact; absent otherwise.
        public var alias: String? = nil
        /// The name the sender claimed in its last handshake with this node (its
        /// `node.name`): self-chosen and not unique; absent when none was heard.
        public var name: String? = nil
        /// True for an emergency broadcast (to every node, `scmesh send --emergency
        /// --broadcast`); absent otherwise.
        public var broadcast: Bool? = nil
        /// True while it is unread (`scmesh read` marks it read); absent otherwise.
        public var unread: Bool? = nil

        enum CodingKeys: String, CodingKey {
            case id = "messageID"
            case from = "peer"
            case seq, transport, receivedAt, sentAt, bytes, text, payloadBase64, headBase64, topic, emergency, alias
            case name, broadcast, unread
        }
    }

    /// How many of a payload's first bytes ``Message/headBase64`` carries.
    public static let headBytes = 1_024

    /// The messages, oldest first.
    public var messages: [Message]
    /// Messages received since the node started (including those no longer held).
    public var totalReceived: Int

    enum CodingKeys: String, CodingKey {
        case messages, totalReceived
    }

    /// Encodes the messages with their former field names too.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(messages.withDeprecatedNames, forKey: .messages)
        try container.encode(totalReceived, forKey: .totalReceived)
    }
}

extension InboxReply.Message: DeprecatedFieldNames {
    /// `id` and `from`, the former names of `message_id` and `peer`.
    public var deprecatedFields: [(name: String, value: (any Encodable)?)] { [("id", id), ("from", from)] }
}
