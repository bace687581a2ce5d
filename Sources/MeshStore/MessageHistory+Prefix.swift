import GRDB
import MeshCore

extension MessageHistory {
    /// The distinct message IDs in the history that start with `prefix` (lower-case
    /// hex), in order, at most `limit`: how a command finds the one message a short ID
    /// names. A prefix that is not hex matches nothing.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func messageIDs(startingWith prefix: String, limit: Int = 6) async throws(MeshError) -> [MessageID] {
        let prefix = prefix.lowercased()
        guard !prefix.isEmpty, prefix.allSatisfy(\.isHexDigit) else { return [] }
        return try await database.read("find the messages whose ID starts with \(prefix)") { db in
            // A range on the indexed text column: hex digits sort as their values.
            try String.fetchAll(
                db,
                sql:
                    "SELECT DISTINCT messageID FROM history WHERE messageID >= ? AND messageID < ? ORDER BY messageID LIMIT ?",
                arguments: [prefix, prefix + "g", max(0, limit)]
            ).compactMap { MessageID(hex: $0) }
        }
    }
}
