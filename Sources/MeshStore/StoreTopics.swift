import Foundation
import GRDB
import MeshCore

/// The persisted side of topic gossip, the router's ``TopicStore``: the user's
/// subscription choices and the IDs of topic messages already seen, each kept until
/// its message's lifetime ends.
public struct StoreTopics: TopicStore {
    let database: StoreDatabase

    /// Every topic the user subscribed (`true`) or explicitly unsubscribed (`false`).
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func topicSubscriptions() async throws -> [String: Bool] {
        try await database.read("read the topic subscriptions") { db in
            var result: [String: Bool] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT topic, subscribed FROM topicSubscription") {
                result[row["topic"]] = (row["subscribed"] as Int) != 0
            }
            return result
        }
    }

    /// Records the user's choice for `topic`.
    /// - Throws: ``MeshError`` when the store cannot write.
    public func setTopicSubscription(_ topic: String, subscribed: Bool) async throws {
        let now = database.nowMillis
        try await database.write("record the subscription to \(topic)") { db in
            try db.execute(
                sql: """
                    INSERT INTO topicSubscription(topic, subscribed, changedAt) VALUES (?, ?, ?)
                    ON CONFLICT(topic) DO UPDATE SET subscribed = excluded.subscribed, changedAt = excluded.changedAt
                    """,
                arguments: [topic, subscribed ? 1 : 0, now]
            )
        }
    }

    /// The seen topic message IDs that have not expired, with the time each has left;
    /// expired ones are forgotten.
    /// - Throws: ``MeshError`` when the store cannot be read or written.
    public func seenTopicMessages() async throws -> [(MessageID, Duration)] {
        let now = database.nowMillis
        let rows = try await database.write("read the seen topic messages") { db in
            try db.execute(sql: "DELETE FROM topicSeen WHERE expiresAt <= ?", arguments: [now])
            return try Row.fetchAll(db, sql: "SELECT messageID, expiresAt FROM topicSeen").map { row in
                (row["messageID"] as String, row["expiresAt"] as Int64)
            }
        }
        return try rows.map { (id, expiresAt) in (try MessageID.stored(id), .milliseconds(expiresAt - now)) }
    }

    /// Remembers a seen topic message for `remaining`, forgetting expired ones.
    /// - Throws: ``MeshError`` when the store cannot write.
    public func rememberTopicMessage(_ id: MessageID, for remaining: Duration) async throws {
        let now = database.nowMillis
        let expiresAt =
            now + Int64(remaining.components.seconds) * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
        try await database.write("remember topic message \(id.hex)") { db in
            try db.execute(sql: "DELETE FROM topicSeen WHERE expiresAt <= ?", arguments: [now])
            try db.execute(
                sql:
                    "INSERT INTO topicSeen(messageID, expiresAt) VALUES (?, ?) ON CONFLICT(messageID) DO UPDATE SET expiresAt = excluded.expiresAt",
                arguments: [id.hex, expiresAt]
            )
        }
    }

    /// Seen topic message IDs held now (expired ones included until the next write).
    /// - Throws: ``MeshError`` when the store cannot be read.
    public var seenCount: Int {
        get async throws(MeshError) {
            try await database.read("count the seen topic messages") { db in
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM topicSeen") ?? 0
            }
        }
    }
}
