import Foundation
import MeshCore
import MeshStore

/// The reply to `contacts` and to every command that changes the contact book: the
/// whole book afterwards.
public struct ContactsReply: Codable, Sendable, Hashable {
    /// One contact.
    public struct Entry: Codable, Sendable, Hashable {
        /// Its alias.
        public var alias: String
        /// Its peer ID.
        public var peer: PeerID
        /// The note, if any.
        public var note: String?
        /// Whether its messages are dropped.
        public var blocked: Bool
        /// When it was added.
        public var addedAt: Date
        /// When it was last seen: now while it has a live link, else when a link to it
        /// last came up (from the address ledger); absent when never (`last_seen_at`;
        /// formerly `last_seen`, still written, deprecated).
        public var lastSeen: Date? = nil

        enum CodingKeys: String, CodingKey {
            case lastSeen = "lastSeenAt"
            case alias, peer, note, blocked, addedAt
        }

        /// Decodes an entry; `last_seen`, the former name of `last_seen_at`, is read too
        /// (a node of an earlier release writes only that, and it is optional, so a
        /// missing key would not show).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            alias = try container.decode(String.self, forKey: .alias)
            peer = try container.decode(PeerID.self, forKey: .peer)
            note = try container.decodeIfPresent(String.self, forKey: .note)
            blocked = try container.decode(Bool.self, forKey: .blocked)
            addedAt = try container.decode(Date.self, forKey: .addedAt)
            // As ControlJSON's decoder maps it (`lastSeen`), or as written.
            let former = try decoder.container(keyedBy: AnyCodingKey.self)
            lastSeen =
                try container.decodeIfPresent(Date.self, forKey: .lastSeen)
                ?? former.decodeIfPresent(Date.self, forKey: AnyCodingKey("lastSeen"))
                ?? former.decodeIfPresent(Date.self, forKey: AnyCodingKey("last_seen"))
        }

        /// The reply form of a contact.
        public init(_ contact: Contact) {
            alias = contact.alias
            peer = contact.peer
            note = contact.note
            blocked = contact.blocked
            addedAt = contact.addedAt
        }
    }

    /// Every contact, by alias.
    public var contacts: [Entry]
    /// Whether allow-list mode is on: messages from peers that are not contacts are
    /// dropped.
    public var allowOnly: Bool
    /// Messages dropped since the node started, by reason (`dropped.blocked`,
    /// `dropped.not_a_contact`).
    public var dropped: [String: Int]
    /// What the command changed, in one line (absent for `contacts`).
    public var changed: String?
    /// The muted peers (contacts or not): their messages raise no notification.
    public var muted: [PeerID] = []

    enum CodingKeys: String, CodingKey {
        case contacts, allowOnly, dropped, changed, muted
    }

    /// Encodes the contacts with their former field names too.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(contacts.withDeprecatedNames, forKey: .contacts)
        try container.encode(allowOnly, forKey: .allowOnly)
        try container.encode(dropped, forKey: .dropped)
        try container.encodeIfPresent(changed, forKey: .changed)
        try container.encode(muted, forKey: .muted)
    }
}

extension ContactsReply.Entry: DeprecatedFieldNames {
    /// `last_seen`, the former name of `last_seen_at`.
    public var deprecatedFields: [(name: String, value: (any Encodable)?)] { [("last_seen", lastSeen)] }
}
