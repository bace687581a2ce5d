import Foundation
import GRDB
import MeshCore

/// A known peer: its peer ID under an alias of the user's choosing.
public struct Contact: Sendable, Hashable, Codable {
    /// The peer.
    public var peer: PeerID
    /// Its alias: unique in the store regardless of case, 1 to 64 characters, no
    /// surrounding white space, not itself a peer ID (64 hex characters).
    public var alias: String
    /// A free note.
    public var note: String?
    /// Whether messages from this peer are to be refused (enforced by the node).
    public var blocked: Bool
    /// When the contact was first added.
    public var addedAt: Date

    /// Creates a contact.
    public init(peer: PeerID, alias: String, note: String? = nil, blocked: Bool = false, addedAt: Date = Date()) {
        self.peer = peer
        self.alias = alias
        self.note = note
        self.blocked = blocked
        self.addedAt = addedAt
    }

    init(_ row: ContactRow) throws {
        self.init(
            peer: try PeerID.stored(row.peer),
            alias: row.alias,
            note: row.note,
            blocked: row.blocked,
            addedAt: Millis.date(row.addedAt)
        )
    }
}

/// The contact book: peer ID ↔ unique alias (+ note), a blocked flag per contact, and
/// the allow-list setting (accept messages only from contacts). The store only keeps
/// them; the node enforces blocking and the allow-list.
public struct Contacts: Sendable {
    let database: StoreDatabase

    /// Adds a contact, or changes the alias, note and blocked flag of an existing one
    /// (its `addedAt` is kept).
    /// - Throws: ``MeshError`` `.invalidArgument` when the alias is malformed or another
    ///   peer has it (case-insensitively); `.storeFailed` when the file cannot be written.
    public func save(_ contact: Contact) async throws(MeshError) {
        try await write(contact, mustBeNew: false)
    }

    /// Adds a contact.
    /// - Throws: as ``save(_:)``, and `.invalidArgument` when the peer is already a contact.
    public func add(peer: PeerID, alias: String, note: String? = nil) async throws(MeshError) {
        try await write(Contact(peer: peer, alias: alias, note: note, addedAt: database.clock()), mustBeNew: true)
    }

    /// Checks and writes a contact in one transaction.
    private func write(_ contact: Contact, mustBeNew: Bool) async throws(MeshError) {
        let alias = try Self.validate(alias: contact.alias)
        let addedAt = Millis.from(contact.addedAt)
        try await database.write("save contact \(alias)") { db in
            let existing = try ContactRow.fetchOne(db, key: contact.peer.hex)
            if mustBeNew, let existing {
                throw MeshError(
                    .invalidArgument,
                    "peer \(contact.peer.hex) is already a contact, as \"\(existing.alias)\"; save the contact to change its alias"
                )
            }
            if let holder = try ContactRow.fetchOne(
                db,
                sql: "SELECT * FROM contact WHERE alias = ?",
                arguments: [alias]
            ),
                holder.peer != contact.peer.hex
            {
                throw MeshError(
                    .invalidArgument,
                    "alias \"\(alias)\" is already taken by peer \(holder.peer) (as \"\(holder.alias)\"); choose another alias or remove that contact first"
                )
            }
            try ContactRow(
                peer: contact.peer.hex,
                alias: alias,
                note: contact.note,
                blocked: contact.blocked,
                addedAt: existing?.addedAt ?? addedAt
            ).save(db)
        }
    }

    /// Removes the contact of `peer`. Returns whether there was one.
    /// - Throws: ``MeshError`` when the file cannot be written.
    @discardableResult
    public func remove(peer: PeerID) async throws(MeshError) -> Bool {
        try await database.write("remove contact \(peer.hex)") { db in try ContactRow.deleteOne(db, key: peer.hex) }
    }

    /// The contact of `peer`, if any.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func contact(peer: PeerID) async throws(MeshError) -> Contact? {
        try await database.read("look up contact \(peer.hex)") { db in
            try ContactRow.fetchOne(db, key: peer.hex).map(Contact.init)
        }
    }

    /// The contact with this alias (compared regardless of case), if any.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func contact(alias: String) async throws(MeshError) -> Contact? {
        let alias = alias.trimmingCharacters(in: .whitespacesAndNewlines)
        return try await database.read("look up contact \(alias)") { db in
            try ContactRow.fetchOne(db, sql: "SELECT * FROM contact WHERE alias = ?", arguments: [alias]).map(
                Contact.init
            )
        }
    }

    /// Every contact, by alias.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func all() async throws(MeshError) -> [Contact] {
        try await database.read("list the contacts") { db in
            try ContactRow.fetchAll(db, sql: "SELECT * FROM contact ORDER BY alias").map(Contact.init)
        }
    }

    /// Sets the blocked flag of the contact of `peer`.
    /// - Throws: ``MeshError`` `.invalidArgument` when `peer` is not a contact (add it first).
    public func setBlocked(_ blocked: Bool, peer: PeerID) async throws(MeshError) {
        try await database.write("block contact \(peer.hex)") { db in
            try db.execute(sql: "UPDATE contact SET blocked = ? WHERE peer = ?", arguments: [blocked, peer.hex])
            guard db.changesCount == 1 else {
                throw MeshError(.invalidArgument, "peer \(peer.hex) is not a contact; add it with an alias first")
            }
        }
    }

    /// The peers whose messages raise no notification (any peer, contact or not).
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func mutedPeers() async throws(MeshError) -> Set<PeerID> {
        try await database.read("list the muted peers") { db in
            Set(try String.fetchAll(db, sql: "SELECT peer FROM mutedPeer").map { try PeerID.stored($0) })
        }
    }

    /// Mutes or unmutes `peer`.
    /// - Returns: whether anything changed (false: it was muted, or not muted, already).
    /// - Throws: ``MeshError`` when the file cannot be written.
    @discardableResult
    public func setMuted(_ muted: Bool, peer: PeerID) async throws(MeshError) -> Bool {
        let now = Millis.from(database.clock())
        return try await database.write("\(muted ? "mute" : "unmute") peer \(peer.hex)") { db in
            if muted {
                try db.execute(
                    sql: "INSERT INTO mutedPeer(peer, mutedAt) VALUES (?, ?) ON CONFLICT(peer) DO NOTHING",
                    arguments: [peer.hex, now]
                )
            } else {
                try db.execute(sql: "DELETE FROM mutedPeer WHERE peer = ?", arguments: [peer.hex])
            }
            return db.changesCount == 1
        }
    }

    /// Whether the node accepts messages only from contacts (allow-list mode). Off until set.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func allowListOnly() async throws(MeshError) -> Bool {
        try await database.read("read the allow-list setting") { db in
            try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = 'allowListOnly'") == "true"
        }
    }

    /// Turns allow-list mode on or off.
    /// - Throws: ``MeshError`` when the file cannot be written.
    public func setAllowListOnly(_ on: Bool) async throws(MeshError) {
        try await database.write("save the allow-list setting") { db in
            try db.execute(
                sql:
                    "INSERT INTO setting(key, value) VALUES ('allowListOnly', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [on ? "true" : "false"]
            )
        }
    }

    /// Checks an alias and returns it trimmed. An alias may be no peer ID and no
    /// possible start of one (not all hex digits, which `send` would read as an ID
    /// prefix), and holds no control, format (bidi, zero-width) or line-separator
    /// characters, which could make it look like another name on a terminal.
    static func validate(alias: String) throws(MeshError) -> String {
        let trimmed = alias.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw MeshError(.invalidArgument, "an alias must not be empty")
        }
        // Counted in Unicode scalars, as JSON Schema's maxLength in the OpenAPI document.
        guard trimmed.unicodeScalars.count <= 64 else {
            throw MeshError(
                .invalidArgument,
                "alias \"\(trimmed.prefix(20))…\" has \(trimmed.unicodeScalars.count) characters; at most 64"
            )
        }
        guard PeerID(hex: trimmed) == nil else {
            throw MeshError(
                .invalidArgument,
                "alias \"\(trimmed)\" is a peer ID; choose a name that is not 64 hex characters"
            )
        }
        guard !trimmed.allSatisfy(\.isHexDigit) else {
            throw MeshError(
                .invalidArgument,
                "alias \"\(trimmed)\" is all hex digits, which reads as the start of a peer ID; choose a name with another letter"
            )
        }
        let hidden: Set<Unicode.GeneralCategory> = [
            .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse,
        ]
        if let bad = trimmed.unicodeScalars.first(where: { hidden.contains($0.properties.generalCategory) }) {
            throw MeshError(
                .invalidArgument,
                "an alias may not hold control, bidi or other invisible characters (found U+\(String(bad.value, radix: 16, uppercase: true))); choose a plain name"
            )
        }
        return trimmed
    }
}
