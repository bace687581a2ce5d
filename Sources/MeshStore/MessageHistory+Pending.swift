import Foundation
import GRDB
import MeshCore

extension MessageHistory {
    /// The outbound messages still on their way, oldest first: those waiting in the
    /// outbox (``MessageStatus/queued``) and those the next hop took that wait for the
    /// destination's receipt (``MessageStatus/sent``). The delivery receipts this node
    /// returns are not listed.
    /// - Parameters:
    ///   - peer: only messages to this peer; nil for all.
    ///   - limit: at most this many (the oldest).
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func pending(peer: PeerID? = nil, limit: Int = 1_000) async throws(MeshError) -> [HistoryEntry] {
        let limit = max(0, limit)
        return try await database.read("list the messages on their way") { db in
            try HistoryRow.fetchAll(
                db,
                sql: """
                    SELECT * FROM history WHERE direction = 'outbound' AND status IN ('queued', 'sent')
                    AND flags & 2 = 0 AND (?1 IS NULL OR peer = ?1) ORDER BY id LIMIT ?2
                    """,
                arguments: [peer?.hex, limit]
            ).map(HistoryEntry.init)
        }
    }

    /// How many outbound messages are on their way (queued or sent, receipts not
    /// counted), and their payload bytes.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func pendingTotals() async throws(MeshError) -> (messages: Int, bytes: Int) {
        try await database.read("count the messages on their way") { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) AS messages, COALESCE(SUM(bytes), 0) AS bytes FROM history
                    WHERE direction = 'outbound' AND status IN ('queued', 'sent') AND flags & 2 = 0
                    """
            )
            return (row?["messages"] ?? 0, row?["bytes"] ?? 0)
        }
    }

    /// How many history entries (receipts not counted) have each status, for one peer
    /// or all.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func statusCounts(
        peer: PeerID? = nil,
        direction: MessageDirection = .outbound
    ) async throws(MeshError) -> [MessageStatus: Int] {
        try await database.read("count the message history by status") { db in
            var counts: [MessageStatus: Int] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT status, COUNT(*) AS count FROM history WHERE direction = ?1 AND flags & 2 = 0
                    AND (?2 IS NULL OR peer = ?2) GROUP BY status
                    """,
                arguments: [direction.name, peer?.hex]
            ) {
                counts[MessageStatus(row["status"])] = row["count"]
            }
            return counts
        }
    }
}
