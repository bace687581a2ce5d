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

    /// Times are integer milliseconds since 1970 (UTC); IDs are lowercase hex (message
    /// IDs 32 characters, peer IDs 64), readable in the `sqlite3` shell.
    private static let schemaV1 = """
        -- Messages received for this node. The sequence is never reused (AUTOINCREMENT).
        CREATE TABLE inbox (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            messageID TEXT NOT NULL UNIQUE,
            sender TEXT NOT NULL,
            transport TEXT NOT NULL,
            receivedAt INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            payload BLOB NOT NULL
        );
        CREATE INDEX inbox_sender ON inbox(sender, sequence);

        -- What each sender holds in the inbox, kept by triggers: the per-sender share.
        CREATE TABLE inboxShare (
            sender TEXT PRIMARY KEY,
            messages INTEGER NOT NULL,
            bytes INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX inboxShare_messages ON inboxShare(messages);
        CREATE INDEX inboxShare_bytes ON inboxShare(bytes);
        CREATE TRIGGER inbox_insert AFTER INSERT ON inbox BEGIN
            INSERT INTO inboxShare(sender, messages, bytes) VALUES (NEW.sender, 1, NEW.bytes)
                ON CONFLICT(sender) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes;
        END;
        CREATE TRIGGER inbox_delete AFTER DELETE ON inbox BEGIN
            UPDATE inboxShare SET messages = messages - 1, bytes = bytes - OLD.bytes WHERE sender = OLD.sender;
            DELETE FROM inboxShare WHERE sender = OLD.sender AND messages <= 0;
        END;

        -- Received message IDs, kept for the dedup retention even after the inbox dropped them.
        CREATE TABLE dedup (
            messageID TEXT PRIMARY KEY,
            receivedAt INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX dedup_receivedAt ON dedup(receivedAt);

        -- One row per message and direction: where it is and when it got there.
        CREATE TABLE history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            messageID TEXT NOT NULL,
            direction TEXT NOT NULL,
            peer TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            status TEXT NOT NULL,
            transport TEXT,
            reason TEXT,
            createdAt INTEGER NOT NULL,
            sentAt INTEGER,
            deliveredAt INTEGER,
            finishedAt INTEGER,
            expiresAt INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            UNIQUE (messageID, direction)
        );
        CREATE INDEX history_peer ON history(peer, id);
        CREATE INDEX history_status ON history(status, expiresAt);

        -- Every event of a message's life: the answer to "why did it not arrive".
        CREATE TABLE trace (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            historyID INTEGER NOT NULL REFERENCES history(id) ON DELETE CASCADE,
            at INTEGER NOT NULL,
            kind TEXT NOT NULL,
            status TEXT,
            transport TEXT,
            reason TEXT,
            attempt INTEGER
        );
        CREATE INDEX trace_history ON trace(historyID, id);

        -- Outbound messages whose payload is still this node's to send (queued).
        CREATE TABLE outbox (
            number INTEGER PRIMARY KEY AUTOINCREMENT,
            historyID INTEGER NOT NULL UNIQUE REFERENCES history(id) ON DELETE CASCADE,
            messageID TEXT NOT NULL UNIQUE,
            destination TEXT NOT NULL,
            flags INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            claimed INTEGER NOT NULL DEFAULT 0,
            payload BLOB NOT NULL
        );
        CREATE INDEX outbox_destination ON outbox(destination, number);

        CREATE TABLE contact (
            peer TEXT PRIMARY KEY,
            alias TEXT NOT NULL UNIQUE COLLATE NOCASE,
            note TEXT,
            blocked INTEGER NOT NULL DEFAULT 0,
            addedAt INTEGER NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE setting (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID;

        -- The address ledger: how each address of each peer has worked out.
        CREATE TABLE address (
            peer TEXT NOT NULL,
            transport TEXT NOT NULL,
            address TEXT NOT NULL,
            successes INTEGER NOT NULL DEFAULT 0,
            failures INTEGER NOT NULL DEFAULT 0,
            lastSeen INTEGER NOT NULL,
            lastSuccess INTEGER,
            lastFailure INTEGER,
            PRIMARY KEY (peer, transport, address)
        ) WITHOUT ROWID;
        """

    /// Receipts: the DATA flags of each outbound entry (bit 1 marks a delivery receipt
    /// this node returns, kept out of the user's history listing) and the digest a
    /// receipt for it must carry.
    private static let schemaV2 = """
        ALTER TABLE history ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE history ADD COLUMN contentDigest BLOB;
        """

    /// Relaying with custody: the outbox is the relay queue. A message this node
    /// carries for another keeps its origin (hex peer ID; NULL for this node's own
    /// messages) and the TTL it goes on with (NULL: the router's default), in the
    /// outbox row while it waits and in its history entry for good.
    private static let schemaV3 = """
        ALTER TABLE outbox ADD COLUMN origin TEXT;
        ALTER TABLE outbox ADD COLUMN ttl INTEGER;
        ALTER TABLE history ADD COLUMN origin TEXT;
        """

    /// Topics (gossip publish/subscribe): the user's subscription choices (1 =
    /// subscribed, 0 = explicitly unsubscribed, which keeps a default topic off), the
    /// IDs of topic messages already seen until their lifetime ends (so a restarted
    /// node neither delivers nor forwards them again), and the topic of each inbox
    /// entry (NULL for a direct message).
    private static let schemaV4Topics = """
        CREATE TABLE topicSubscription (
            topic TEXT PRIMARY KEY,
            subscribed INTEGER NOT NULL,
            changedAt INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE topicSeen (
            messageID TEXT PRIMARY KEY,
            expiresAt INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX topicSeen_expiresAt ON topicSeen(expiresAt);
        ALTER TABLE inbox ADD COLUMN topic TEXT;
        """

    /// Large outbox payloads in files: the name of the file in the directory beside
    /// the store (`<store>-payloads/`) that holds the row's payload, whose `payload`
    /// is then empty; NULL when the payload is in the row.
    private static let schemaV5PayloadFiles = """
        ALTER TABLE outbox ADD COLUMN payloadFile TEXT;
        """

    /// One row (id 1): the sequence of this node's latest own announcement without the
    /// solicited flag, and the highest it announced (u64 stored as its i64 bit pattern).
    private static let schemaV10AnnounceState = """
        CREATE TABLE announceState (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            unsolicited INTEGER NOT NULL,
            latest INTEGER NOT NULL
        );
        """

    /// The route table (docs/PROTOCOL.md §A.5, "Restarting"), replaced as a whole at
    /// every save: a row per advertisement, its origin's entry repeated on each
    /// (sequences as their i64 bit patterns; ages in milliseconds at `savedAt`, a time
    /// in milliseconds since 1970).
    private static let schemaV11RouteTable = """
        CREATE TABLE routeTable (
            origin TEXT NOT NULL,
            neighbour TEXT NOT NULL,
            hops INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            signature BLOB NOT NULL,
            transport TEXT NOT NULL,
            ageMs INTEGER NOT NULL,
            highest INTEGER NOT NULL,
            entryAgeMs INTEGER NOT NULL,
            summarised INTEGER,
            feasibilityDistance INTEGER NOT NULL,
            savedAt INTEGER NOT NULL,
            PRIMARY KEY (origin, neighbour)
        ) WITHOUT ROWID;
        """

    /// Flooding (docs/PROTOCOL.md §A.9–A.10): the IDs of flooded messages this node
    /// took or started, kept for the dedup retention so that a restarted node does not
    /// flood them again, and whether an inbox entry arrived as an emergency (1) or not.
    private static let schemaV6Flood = """
        CREATE TABLE floodSeen (
            messageID TEXT PRIMARY KEY,
            seenAt INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX floodSeen_seenAt ON floodSeen(seenAt);
        ALTER TABLE inbox ADD COLUMN emergency INTEGER NOT NULL DEFAULT 0;
        """

    /// Large received payloads in files: the name of the file in the payload directory
    /// beside the store (`<store>-payloads/`) that holds the inbox entry's payload,
    /// whose `payload` is then empty; NULL when the payload is in the row.
    private static let schemaV8InboxPayloadFiles = """
        ALTER TABLE inbox ADD COLUMN payloadFile TEXT;
        """

    /// The invitations this node issued (their IDs, validity and revocation) and the
    /// peers that joined by each.
    private static let schemaV14Invitations = """
        CREATE TABLE invitation (
            id TEXT PRIMARY KEY NOT NULL,
            issuedAt INTEGER NOT NULL,
            expiresAt INTEGER NOT NULL,
            revoked INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE invitationJoin (
            id TEXT NOT NULL REFERENCES invitation(id) ON DELETE CASCADE,
            peer TEXT NOT NULL,
            joinedAt INTEGER NOT NULL,
            PRIMARY KEY (id, peer)
        );
        """

    /// Received message IDs are keyed on (origin, ID): a message ID is chosen by its
    /// origin, so one origin's message must never make another's with the same ID a
    /// duplicate. Rows kept from before have origin '' and still match any origin
    /// until the retention forgets them. The inbox is rebuilt with the same key
    /// (SQLite cannot drop a UNIQUE constraint), its triggers and index recreated; the
    /// caller keeps its AUTOINCREMENT counter.
    private static let schemaV12DedupOrigin = """
        CREATE TABLE dedupByOrigin (
            origin TEXT NOT NULL,
            messageID TEXT NOT NULL,
            receivedAt INTEGER NOT NULL,
            PRIMARY KEY (origin, messageID)
        ) WITHOUT ROWID;
        INSERT INTO dedupByOrigin (origin, messageID, receivedAt) SELECT '', messageID, receivedAt FROM dedup;
        DROP TABLE dedup;
        ALTER TABLE dedupByOrigin RENAME TO dedup;
        CREATE INDEX dedup_receivedAt ON dedup(receivedAt);
        CREATE INDEX dedup_messageID ON dedup(messageID);

        DROP TRIGGER inbox_insert;
        DROP TRIGGER inbox_delete;
        CREATE TABLE inboxByOrigin (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            messageID TEXT NOT NULL,
            sender TEXT NOT NULL,
            transport TEXT NOT NULL,
            receivedAt INTEGER NOT NULL,
            bytes INTEGER NOT NULL,
            payload BLOB NOT NULL,
            topic TEXT,
            emergency INTEGER NOT NULL DEFAULT 0,
            payloadFile TEXT,
            UNIQUE (sender, messageID)
        );
        INSERT INTO inboxByOrigin (sequence, messageID, sender, transport, receivedAt, bytes, payload, topic, emergency, payloadFile)
            SELECT sequence, messageID, sender, transport, receivedAt, bytes, payload, topic, emergency, payloadFile FROM inbox;
        DROP TABLE inbox;
        ALTER TABLE inboxByOrigin RENAME TO inbox;
        CREATE INDEX inbox_sender ON inbox(sender, sequence);
        CREATE TRIGGER inbox_insert AFTER INSERT ON inbox BEGIN
            INSERT INTO inboxShare(sender, messages, bytes) VALUES (NEW.sender, 1, NEW.bytes)
                ON CONFLICT(sender) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes;
        END;
        CREATE TRIGGER inbox_delete AFTER DELETE ON inbox BEGIN
            UPDATE inboxShare SET messages = messages - 1, bytes = bytes - OLD.bytes WHERE sender = OLD.sender;
            DELETE FROM inboxShare WHERE sender = OLD.sender AND messages <= 0;
        END;
        """

    /// The outbox's per-destination share, kept by triggers as `inboxShare` is: the
    /// bounds an enqueue checks read one row each instead of summing the outbox.
    private static let schemaV18OutboxShare = """
        CREATE TABLE outboxShare (
            destination TEXT PRIMARY KEY,
            messages INTEGER NOT NULL,
            bytes INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO outboxShare(destination, messages, bytes)
            SELECT destination, COUNT(*), SUM(bytes) FROM outbox GROUP BY destination;
        CREATE TRIGGER outbox_share_insert AFTER INSERT ON outbox BEGIN
            INSERT INTO outboxShare(destination, messages, bytes) VALUES (NEW.destination, 1, NEW.bytes)
                ON CONFLICT(destination) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes;
        END;
        CREATE TRIGGER outbox_share_delete AFTER DELETE ON outbox BEGIN
            UPDATE outboxShare SET messages = messages - 1, bytes = bytes - OLD.bytes
                WHERE destination = OLD.destination;
            DELETE FROM outboxShare WHERE destination = OLD.destination AND messages <= 0;
        END;
        CREATE TRIGGER outbox_share_update AFTER UPDATE OF destination, bytes ON outbox BEGIN
            UPDATE outboxShare SET messages = messages - 1, bytes = bytes - OLD.bytes
                WHERE destination = OLD.destination;
            DELETE FROM outboxShare WHERE destination = OLD.destination AND messages <= 0;
            INSERT INTO outboxShare(destination, messages, bytes) VALUES (NEW.destination, 1, NEW.bytes)
                ON CONFLICT(destination) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes;
        END;
        """
}
