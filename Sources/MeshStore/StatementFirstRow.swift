import GRDB

extension Statement {
    /// What `read` makes of the first row `arguments` select, read in place; nil when
    /// none is selected. `Row.fetchOne` copies the row with a dictionary of its column
    /// names, a cost the store's hot lookups (one per outbox write) do not pay.
    func firstRow<T>(_ arguments: StatementArguments = [], _ read: (Row) throws -> T) throws -> T? {
        let cursor = try Row.fetchCursor(self, arguments: arguments)
        guard let row = try cursor.next() else { return nil }
        return try read(row)
    }
}
