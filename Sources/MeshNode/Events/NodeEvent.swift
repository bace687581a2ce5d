import Foundation
import MeshCore

/// One numbered event as the event stream, `scmesh events` and the dashboard see it:
/// the router event's fields plus its `id` and `occurred_at`,
/// `{"id":7,"occurred_at":"…","kind":"message_received","peer":"…","message_id":"…"}`
/// (and `time`, the former name of `occurred_at`, deprecated).
public struct NodeEvent: Sendable, Hashable, Codable {
    /// Its number: one more than the event before, for the node's lifetime.
    public var id: Int
    /// When the node recorded it.
    public var time: Date
    /// What happened.
    public var event: RouterEvent

    /// Creates an event.
    public init(id: Int, time: Date, event: RouterEvent) {
        self.id = id
        self.time = time
        self.event = event
    }

    package init(_ entry: EventLog.Entry) {
        self.init(id: entry.id, time: entry.time, event: entry.event)
    }

    enum CodingKeys: String, CodingKey {
        case id
        case occurredAt = "occurred_at"
        /// The former name of `occurred_at` (deprecated).
        case time
    }

    /// Decodes the router event's fields and `id` and `occurred_at` (or the former
    /// `time`) from one object.
    public init(from decoder: any Decoder) throws {
        event = try RouterEvent(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int.self, forKey: .id)
        time =
            try container.decodeIfPresent(Date.self, forKey: .occurredAt)
            ?? container.decode(Date.self, forKey: .time)
    }

    /// Encodes the router event's fields and `id`, `occurred_at` and `time` into one object.
    public func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(time, forKey: .occurredAt)
        try container.encode(time, forKey: .time)
    }
}

/// The reply of `events`: the held events after the one asked for, oldest first.
public struct EventsReply: Sendable, Hashable, Codable {
    /// Always true in a reply that decoded.
    public var ok = true
    /// The events, oldest first.
    public var events: [NodeEvent]
    /// The newest event's id (0 before the first): `--after` for the next call.
    public var lastID: Int
    /// Events after the one asked for that the node no longer holds (it keeps the
    /// newest 4096): how many were missed.
    public var missed: Int

    /// Creates a reply.
    public init(events: [NodeEvent], lastID: Int, missed: Int) {
        self.events = events
        self.lastID = lastID
        self.missed = missed
    }

    /// `ok` is not among them: the reply's envelope writes it once.
    enum CodingKeys: String, CodingKey {
        case events, missed
        case lastID = "last_id"
    }

    /// Decodes a reply line. Its keys are already the snake_case names the types
    /// declare (`message_id`, `last_id`), so it is read without ControlJSON's key
    /// mapping.
    /// - Throws: the node's refusal as a ``MeshError``, or a `DecodingError`.
    public static func decode(_ reply: ControlReply) throws -> EventsReply {
        guard reply.ok else { return try reply.decode(EventsReply.self) }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(EventsReply.self, from: Data(reply.line.utf8))
    }
}
