import MeshCore
import MeshStore
import Synchronization

/// The node's inbound filter: the router's ``MessageSink``, in front of the persisted
/// inbox, that enforces the contact book — messages from a blocked contact, and in
/// allow-list mode from anyone who is not a contact, never reach the inbox.
///
/// **Accept and drop.** A refused message is taken and discarded, counted under
/// `dropped.blocked` / `dropped.not_a_contact`: the filter throws MeshCore's
/// `discarded` error, so the hop is acknowledged but no delivery receipt goes back
/// (the sender's message stays `sent`, never `delivered`, until it expires). Refusing it instead (no
/// acknowledgement) would make the sender retry on its backoff until the message
/// expires — days of traffic for nothing — and would tell a blocked sender that it is
/// blocked. Messages dropped here are gone: unblocking a peer or adding it as a
/// contact does not bring back what it sent meanwhile.
///
/// The contact book is read from the store once, at the first message, and kept in
/// memory; the control commands that change contacts call ``reload()``.
///
/// Each message that becomes a new inbox entry goes to the ``Notifier`` unless its
/// sender is muted (`scmesh contacts mute`).
public final class ContactFilter: MessageSink, Sendable {
    /// What the filter does with a message from one peer.
    public enum Verdict: Sendable, Hashable {
        /// The message goes to the inbox.
        case accept
        /// The sender is a blocked contact: dropped.
        case blocked
        /// Allow-list mode is on and the sender is not a contact: dropped.
        case notAContact
    }

    private struct Book: Sendable {
        var contacts: Set<PeerID>
        var blocked: Set<PeerID>
        var allowListOnly: Bool
        var aliases: [PeerID: String]
        var muted: Set<PeerID>
    }

    private let inbox: StoreInbox
    private let contacts: Contacts
    private let book = Mutex<Book?>(nil)
    /// Reload tickets: a reload that read the store before another one does not
    /// overwrite the other's newer result.
    private let tickets = Mutex<(issued: Int, written: Int)>((0, 0))
    private let dropped = Mutex<[String: Int]>([:])
    private let notifier: Notifier?
    private let acceptances: InvitationAcceptance?
    private let readReceipts: ReadReceipts?

    /// Creates the filter in front of `inbox`, reading `contacts`; new entries go to
    /// `notifier`; invitation acceptances to `acceptances`, before any verdict.
    public init(
        inbox: StoreInbox,
        contacts: Contacts,
        notifier: Notifier? = nil,
        acceptances: InvitationAcceptance? = nil,
        readReceipts: ReadReceipts? = nil
    ) {
        self.inbox = inbox
        self.contacts = contacts
        self.notifier = notifier.flatMap { $0.isActive ? $0 : nil }
        self.acceptances = acceptances
        self.readReceipts = readReceipts
    }

    /// Whether `message` was an invitation acceptance or a read receipt, handled here
    /// and not for the inbox.
    private func tookNodeMessage(_ message: InboundMessage) async throws -> Bool {
        if let readReceipts, try await readReceipts.take(message) { return true }
        guard let acceptances else { return false }
        switch try await acceptances.take(message) {
        case .notAnAcceptance: return false
        case .handled(let added):
            if added { _ = try await reload() as Book }
            return true
        }
    }

    /// Takes a message: stores it in the inbox (returning once it is committed), or
    /// drops it when the contact book says so.
    /// - Throws: ``MeshError`` when the store cannot be read or written; the router then
    ///   does not acknowledge the hop and the sender retries.
    public func accept(_ message: InboundMessage) async throws {
        if try await tookNodeMessage(message) { return }
        switch try await verdict(for: message.from) {
        case .accept:
            let entry = try await inbox.append(message)
            if entry != nil { notify(message) }
        case .blocked:
            dropped.withLock { $0["dropped.blocked", default: 0] += 1 }
            throw MeshError(.discarded, "message \(message.id.hex) from blocked contact \(message.from.short) dropped")
        case .notAContact:
            dropped.withLock { $0["dropped.not_a_contact", default: 0] += 1 }
            throw MeshError(
                .discarded,
                "message \(message.id.hex) from \(message.from.short), not a contact, dropped (allow-list mode)"
            )
        }
    }

    /// Takes a message with its delivery receipt: stores both in one commit (see
    /// `StoreInbox.accept(_:queueing:in:)`), or drops the message, and queues no
    /// receipt, when the contact book says so.
    /// - Throws: as ``accept(_:)``, or when the receipt cannot be queued.
    public func accept(
        _ message: InboundMessage,
        queueing receipt: OutboundMessage,
        in queue: any OutboundQueue
    ) async throws {
        if try await tookNodeMessage(message) {
            try await queue.enqueueReceipt(receipt)
            return
        }
        guard try await verdict(for: message.from) == .accept else {
            try await accept(message)  // throws `discarded`, counted
            return
        }
        if try await inbox.append(message, queueing: receipt, in: queue) != nil { notify(message) }
    }

    /// Hands a new inbox entry to the notifier, unless its sender is muted.
    private func notify(_ message: InboundMessage) {
        guard let notifier, let book = book.withLock({ $0 }), !book.muted.contains(message.from) else { return }
        notifier.received(message, alias: book.aliases[message.from])
    }

    /// Whether `peer` is muted (its messages raise no notification).
    public func isMuted(_ peer: PeerID) -> Bool {
        book.withLock { $0?.muted.contains(peer) ?? false }
    }

    /// What the filter would do with a message from `peer` now.
    /// - Throws: ``MeshError`` when the contact book cannot be read.
    public func verdict(for peer: PeerID) async throws(MeshError) -> Verdict {
        let current: Book
        if let loaded = book.withLock({ $0 }) {
            current = loaded
        } else {
            current = try await reload()
        }
        if current.blocked.contains(peer) { return .blocked }
        if current.allowListOnly, !current.contacts.contains(peer) { return .notAContact }
        return .accept
    }

    /// Reads the contact book and the allow-list setting from the store again.
    /// - Throws: ``MeshError`` when the store cannot be read.
    public func reload() async throws(MeshError) {
        _ = try await reload() as Book
    }

    private func reload() async throws(MeshError) -> Book {
        let ticket = tickets.withLock { tickets in
            tickets.issued += 1
            return tickets.issued
        }
        let all = try await contacts.all()
        let loaded = Book(
            contacts: Set(all.map(\.peer)),
            blocked: Set(all.filter(\.blocked).map(\.peer)),
            allowListOnly: try await contacts.allowListOnly(),
            aliases: Dictionary(all.map { ($0.peer, $0.alias) }, uniquingKeysWith: { first, _ in first }),
            muted: try await contacts.mutedPeers()
        )
        tickets.withLock { tickets in
            guard ticket > tickets.written else { return }
            tickets.written = ticket
            book.withLock { $0 = loaded }
        }
        return loaded
    }

    /// Messages dropped so far, by reason (`dropped.blocked`, `dropped.not_a_contact`).
    public var counters: [String: Int] { dropped.withLock { $0 } }
}
