import MeshCore

extension ControlHandler {
    /// The most events one `events` reply carries.
    static let maximumEventsPerReply = 4096

    /// `events`: the held events after event `after`, oldest first, at most `limit`
    /// (default 100); without `after`, the newest `limit`.
    /// - Throws: `.invalidArgument` for a negative `after` or a `limit` outside
    ///   1…4096, or when the node keeps no event log.
    package func events(after: Int?, limit: Int?) throws -> EventsReply {
        guard let events else {
            throw MeshError(.invalidArgument, "this node keeps no event log; run it with scmesh run")
        }
        let limit = limit ?? 100
        guard (1...Self.maximumEventsPerReply).contains(limit) else {
            throw MeshError(.invalidArgument, "limit must be 1 to \(Self.maximumEventsPerReply), got \(limit)")
        }
        if let after, after < 0 {
            throw MeshError(.invalidArgument, "after must be an event id (0 or more), got \(after)")
        }
        let lastID = events.lastID
        let start = after ?? max(0, lastID - limit)
        let (entries, missed) = events.entries(after: start, limit: limit)
        return EventsReply(events: entries.map(NodeEvent.init), lastID: lastID, missed: after == nil ? 0 : missed)
    }
}
