/// The SQL of the schema's steps (``StoreMigrations/steps``), as each shipped: never
/// edited once it has.
extension StoreMigrations {
    /// Times are integer milliseconds since 1970 (UTC); IDs are lowercase hex (message
    /// IDs 32 characters, peer IDs 64), readable in the `sqlite3` shell.
    static let schemaV1 = """
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
    static let schemaV2 = """
        ALTER TABLE history ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE history ADD COLUMN contentDigest BLOB;
        """

    /// Relaying with custody: the outbox is the relay queue. A message this node
    /// carries for another keeps its origin (hex peer ID; NULL for this node's own
    /// messages) and the TTL it goes on with (NULL: the router's default), in the
    /// outbox row while it waits and in its history entry for good.
    static let schemaV3 = """
        ALTER TABLE outbox ADD COLUMN origin TEXT;
        ALTER TABLE outbox ADD COLUMN ttl INTEGER;
        ALTER TABLE history ADD COLUMN origin TEXT;
        """

    /// Topics (gossip publish/subscribe): the user's subscription choices (1 =
    /// subscribed, 0 = explicitly unsubscribed, which keeps a default topic off), the
    /// IDs of topic messages already seen until their lifetime ends (so a restarted
    /// node neither delivers nor forwards them again), and the topic of each inbox
    /// entry (NULL for a direct message).
    static let schemaV4Topics = """
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
    static let schemaV5PayloadFiles = """
        ALTER TABLE outbox ADD COLUMN payloadFile TEXT;
        """

    /// One row (id 1): the sequence of this node's latest own announcement without the
    /// solicited flag, and the highest it announced (u64 stored as its i64 bit pattern).
    static let schemaV10AnnounceState = """
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
    static let schemaV11RouteTable = """
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
    static let schemaV6Flood = """
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
    static let schemaV8InboxPayloadFiles = """
        ALTER TABLE inbox ADD COLUMN payloadFile TEXT;
        """

    /// The invitations this node issued (their IDs, validity and revocation) and the
    /// peers that joined by each.
    static let schemaV14Invitations = """
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
    static let schemaV12DedupOrigin = """
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

    /// History keeps the text: each entry's payload as text (UTF-8 under 64 KiB) or
    /// its first bytes, and when an inbound message was read (NULL: unread). Messages
    /// received before this migration count as read, so an upgraded node does not show
    /// its whole past as unread.
    static let schemaV15HistoryText = """
        ALTER TABLE history ADD COLUMN text TEXT;
        ALTER TABLE history ADD COLUMN head BLOB;
        ALTER TABLE history ADD COLUMN readAt INTEGER;
        UPDATE history SET readAt = createdAt WHERE direction = 'inbound';
        CREATE INDEX history_unread ON history(peer) WHERE direction = 'inbound' AND readAt IS NULL;
        CREATE INDEX history_createdAt ON history(createdAt);
        """

    /// The outbox's per-destination share, kept by triggers as `inboxShare` is: the
    /// bounds an enqueue checks read one row each instead of summing the outbox.
    static let schemaV18OutboxShare = """
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
