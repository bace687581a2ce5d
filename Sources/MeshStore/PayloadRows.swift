import GRDB

/// Rows that may name a payload file (`payloadFile` in the `outbox` and `inbox`
/// tables): deleting them returns their files, to remove once the transaction is
/// committed (removed earlier, a rollback would leave a row without its payload).
enum PayloadRows {
    /// Deletes the rows of `table` matching `condition` (with one argument); returns
    /// the payload files they named. The DELETE is the last statement, so
    /// `db.changesCount` counts the rows.
    static func delete(
        _ db: Database,
        from table: String,
        where condition: String,
        _ argument: Int64
    ) throws -> [String] {
        // Cached: a sent message's row goes this way at every send.
        let files = try String.fetchAll(
            db.cachedStatement(sql: "SELECT payloadFile FROM \(table) WHERE \(condition) AND payloadFile IS NOT NULL"),
            arguments: [argument]
        )
        try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(condition)").execute(arguments: [argument])
        return files
    }

    /// The payload files the rows of `table` name.
    static func fileNames(_ db: Database, in table: String) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT payloadFile FROM \(table) WHERE payloadFile IS NOT NULL"))
    }
}
