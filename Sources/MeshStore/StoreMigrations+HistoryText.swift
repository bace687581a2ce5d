extension StoreMigrations {
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
}
