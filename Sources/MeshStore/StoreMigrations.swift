import GRDB

/// The store's schema, as a timeline of named migrations from the first schema on.
///
/// A migration that has shipped is never edited: a change is a new migration appended
/// here, which also sets `PRAGMA user_version` to its position (the schema version).
/// Migrations speak SQL only, never the Swift record types, so they describe the
/// past as it was.
enum StoreMigrations {
    /// `PRAGMA application_id` of an SCMesh store: "SCMS". SQLite keeps it in the file
    /// header, so `file(1)` and the opening checks recognise the file as ours.
    static let applicationID: Int32 = 0x5343_4D53

    /// One step of the timeline: its identifier (GRDB records it as applied) and what
    /// it does to the schema. The loop in ``migrator`` sets the schema version after it.
    struct Step: Sendable {
        let identifier: String
        let apply: @Sendable (Database) throws -> Void

        /// A step that runs `sql`.
        static func sql(_ identifier: String, _ sql: String) -> Step {
            Step(identifier: identifier) { db in try db.execute(sql: sql) }
        }
    }

    /// The steps, in order; the schema version is the number applied.
    static let steps: [Step] = [
        Step(identifier: "v1: inbox, dedup, outbox, history, contacts, address ledger") { db in
            try db.execute(sql: schemaV1)
            try db.execute(sql: "PRAGMA application_id = \(applicationID)")
        },
        .sql("v2: history flags and content digest (delivery receipts)", schemaV2),
        .sql("v3: origin and TTL of relayed messages (multi-hop custody)", schemaV3),
        .sql("v4-topics: topic subscriptions, seen topic message IDs, inbox topic", schemaV4Topics),
        .sql("v5-payload-files: large outbox payloads in files beside the store", schemaV5PayloadFiles),
        .sql("v6-flood: flood duplicate cache, inbox emergency mark", schemaV6Flood),
        .sql(
            "v7-previous-hop: the neighbour a relayed message came from (relay loop rule across restarts)",
            "ALTER TABLE history ADD COLUMN previousHop TEXT"
        ),
        .sql("v8-inbox-payload-files: large received payloads in files beside the store", schemaV8InboxPayloadFiles),
        .sql(
            "v9-relayed-ttl: the TTL a relayed message goes on with, in its history (relay loop rule across restarts)",
            "ALTER TABLE history ADD COLUMN ttl INTEGER"
        ),
        .sql(
            "v10-announce-state: the sequences of this node's own route announcements (a restart repeats the one the mesh holds)",
            schemaV10AnnounceState
        ),
        .sql(
            "v11-route-table: the route table, kept across restarts (a restarted node starts with the routes it had)",
            schemaV11RouteTable
        ),
        Step(
            identifier:
                "v12-dedup-origin: received message IDs and inbox entries keyed on (origin, ID), so no origin can squat another's ID"
        ) { db in
            let inboxSequence = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'inbox'")
            try db.execute(sql: schemaV12DedupOrigin)
            if let inboxSequence {
                try db.execute(
                    sql: "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'inbox'",
                    arguments: [inboxSequence]
                )
            }
        },
        .sql(
            "v13-muted: peers whose messages raise no notification",
            "CREATE TABLE mutedPeer (peer TEXT PRIMARY KEY NOT NULL, mutedAt INTEGER NOT NULL)"
        ),
        .sql("v14-invitations: the invitations this node issued and who joined by them", schemaV14Invitations),
        .sql(
            "v15-history-text: the text (or head) of each message in its history entry, and when an inbound one was read",
            schemaV15HistoryText
        ),
        .sql(
            "v16-inbox-sent-at: when a received message was sent, as its sealed envelope says",
            "ALTER TABLE inbox ADD COLUMN sentAt INTEGER"
        ),
        .sql(
            "v17-peer-names: the name each peer claimed in its last link handshake",
            "CREATE TABLE peerName (peer TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, heardAt INTEGER NOT NULL) WITHOUT ROWID"
        ),
        .sql(
            "v18-outbox-share: what each destination holds in the outbox, kept by triggers (the bounds read it, not the outbox)",
            schemaV18OutboxShare
        ),
    ]

    /// The migration identifiers, in order.
    static var identifiers: [String] { steps.map(\.identifier) }

    /// The schema version this build writes.
    static var currentVersion: Int { steps.count }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for (index, step) in steps.enumerated() {
            migrator.registerMigration(step.identifier) { db in
                try step.apply(db)
                try db.execute(sql: "PRAGMA user_version = \(index + 1)")
            }
        }
        return migrator
    }
}
