import Foundation
import MeshCore
import MeshStore

/// One message in a `history`, `trace` or `outbox` reply: what the store remembers of
/// it (MeshStore's `HistoryEntry`), with the peer's alias.
public struct HistoryMessage: Codable, Sendable, Hashable {
    /// The message ID.
    public var id: MessageID
    /// `outbound` (sent by this node) or `inbound` (received).
    public var direction: MessageDirection
    /// The destination of an outbound message, the sender of an inbound one.
    public var peer: PeerID
    /// The peer's alias, when it is a contact.
    public var alias: String?
    /// Payload bytes.
    public var bytes: Int
    /// `queued`, `sent`, `delivered`, `failed` or `expired` (outbound); `received`
    /// (inbound). New statuses may be added.
    public var status: MessageStatus
    /// The transport of the last hop that took it (or brought it).
    public var transport: String?
    /// The last reason recorded: why an attempt failed, why it expired.
    public var reason: String?
    /// When it was queued (outbound) or received (inbound).
    public var createdAt: Date
    /// When the next hop first took it.
    public var sentAt: Date?
    /// When the destination's receipt arrived.
    public var deliveredAt: Date?
    /// When it failed or expired.
    public var failedAt: Date?
    /// When it expires if not delivered (outbound).
    public var expiresAt: Date?
    /// How many times it was taken for sending.
    public var attempts: Int
    /// `outbox` only: why it is still waiting, in one line.
    public var waitingFor: String?

    /// The reply form of a history entry.
    public init(_ entry: HistoryEntry, alias: String?) {
        id = entry.id
        direction = entry.direction
        peer = entry.peer
        self.alias = alias
        bytes = entry.bytes
        status = entry.status
        transport = entry.transport
        reason = entry.reason
        createdAt = entry.createdAt
        sentAt = entry.sentAt
        deliveredAt = entry.deliveredAt
        failedAt = entry.failedAt
        expiresAt = entry.expiresAt
        attempts = entry.attempts
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
