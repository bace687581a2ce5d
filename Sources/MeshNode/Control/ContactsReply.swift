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
        /// last came up (from the address ledger); absent when never.
        public var lastSeen: Date? = nil

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
}
