import Foundation
import MeshCore
import MeshStore

/// One message in a `history`, `trace` or `outbox` reply: what the store remembers of
/// it (``HistoryEntry``, the one model of a message's history), with the peer's alias
/// or claimed name and, in `outbox`, why it waits. On the wire the entry's fields sit
/// beside `alias`, `name` and `waiting_for` in one object; in Swift they read through
/// (`message.status`).
@dynamicMemberLookup
public struct HistoryMessage: Codable, Sendable, Hashable {
    /// The store's entry.
    public var entry: HistoryEntry
    /// The peer's alias, when it is a contact.
    public var alias: String?
    /// The name the peer claimed in its last handshake with this node (its
    /// `node.name`): self-chosen and not unique, a claim rather than an identity.
    public var name: String?
    /// `outbox` only: why it is still waiting, in one line.
    public var waitingFor: String?

    /// The reply form of a history entry.
    public init(_ entry: HistoryEntry, alias: String?, name: String? = nil, waitingFor: String? = nil) {
        self.entry = entry
        self.alias = alias
        self.name = name
        self.waitingFor = waitingFor
    }

    /// A field of the entry (`id`, `status`, `createdAt`, ...).
    public subscript<Value>(dynamicMember field: KeyPath<HistoryEntry, Value>) -> Value {
        entry[keyPath: field]
    }

    private enum CodingKeys: String, CodingKey {
        case alias, name, waitingFor
    }

    /// Decodes the entry's fields and `alias`, `name`, `waiting_for` from one object.
    public init(from decoder: any Decoder) throws {
        entry = try HistoryEntry(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        alias = try container.decodeIfPresent(String.self, forKey: .alias)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        waitingFor = try container.decodeIfPresent(String.self, forKey: .waitingFor)
    }

    /// Encodes the entry's fields and `alias`, `name`, `waiting_for` into one object, and `id`,
    /// the former name of `message_id` (deprecated).
    public func encode(to encoder: any Encoder) throws {
        try entry.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(alias, forKey: .alias)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(waitingFor, forKey: .waitingFor)
        var deprecated = encoder.container(keyedBy: AnyCodingKey.self)
        try deprecated.encode(entry.id, forKey: AnyCodingKey("id"))
    }
}

/// The reply to `history`.
public struct HistoryReply: Codable, Sendable, Hashable {
    /// The messages, newest first.
    public var messages: [HistoryMessage]
    /// How many outbound messages (to the peer asked about, or to all) have each
    /// status, over the whole history the store keeps (not only those listed).
    public var outboundCounts: [String: Int]
}

/// The reply to `trace`: one message and everything that happened to it.
public struct TraceReply: Codable, Sendable, Hashable {
    /// The message (the outbound entry when it went both ways, e.g. to this node itself).
    public var message: HistoryMessage
    /// Its trace, oldest first: queued, each attempt, status changes with transport and
    /// reason, restarts, expiry.
    public var trace: [TraceEvent]
    /// Whether a link to the peer is up now.
    public var peerConnected: Bool

    enum CodingKeys: String, CodingKey {
        case message, trace, peerConnected
    }

    /// Encodes the trace's events with their former field names too.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(message, forKey: .message)
        try container.encode(trace.withDeprecatedNames, forKey: .trace)
        try container.encode(peerConnected, forKey: .peerConnected)
    }
}

extension TraceEvent: DeprecatedFieldNames {
    /// `at`, the former name of `occurred_at`.
    public var deprecatedFields: [(name: String, value: (any Encodable)?)] { [("at", at)] }
}

/// The reply to `outbox`: the messages from this node still on their way.
public struct OutboxReply: Codable, Sendable, Hashable {
    /// The messages, oldest first (at most `limit`), each with `waiting_for`.
    public var messages: [HistoryMessage]
    /// How many messages are on their way in all.
    public var total: Int
    /// Their payload bytes.
    public var totalBytes: Int
}
