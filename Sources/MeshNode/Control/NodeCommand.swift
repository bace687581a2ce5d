import MeshCore

/// One command a node answers, with its typed request: what the control socket, the
/// HTTP API and the `scmesh` CLI share.
///
/// The control socket's JSON line (``ControlRequest``, `{"cmd":"send",…}`) becomes a
/// command at the socket's edge (``init(_:)``) and a command becomes that line again
/// in ``ControlClient`` (``wire``); the HTTP handlers build commands from paths, query
/// strings and bodies and call ``ControlHandler``'s functions with their requests.
///
/// ```swift
/// let reply = try await ControlClient(dataDirectory: dir).call(.history(MessageQuery(peer: "bob", limit: 20)))
/// ```
public enum NodeCommand: Sendable, Hashable {
    /// `status`: identity, uptime, transports, counts and counters (``StatusReply``).
    case status
    /// `peers`: every peer with a live link (``PeersReply``).
    case peers
    /// `routes`: the route table (``RoutesReply``).
    case routes
    /// `send`: one message to a peer (``SendReply``).
    case send(SendRequest)
    /// `inbox`: received messages (``InboxReply``).
    case inbox(InboxRequest)
    /// `history`: messages sent and received, newest first (``HistoryReply``).
    case history(MessageQuery)
    /// `trace`: one message's history entry and trace (``TraceReply``); `id` is its
    /// message ID in hex.
    case trace(id: String?)
    /// `outbox`: the messages on their way (``OutboxReply``).
    case outbox(MessageQuery)
    /// `contacts` and its changes (`contacts_add`, …): the contact book (``ContactsReply``).
    case contacts(ContactsRequest)
    /// `topics`: every topic the node knows (``TopicsReply``).
    case topics
    /// `subscribe`: joins a topic's mesh (``TopicsReply``).
    case subscribe(topic: String?)
    /// `unsubscribe`: leaves a topic's mesh (``TopicsReply``).
    case unsubscribe(topic: String?)
    /// `publish`: one message to a topic (``PublishReply``).
    case publish(PublishRequest)
    /// `settings`: the run-time settings, changed first as the request says (``SettingsReply``).
    case settings(SettingsRequest)
    /// `invite`: a signed invitation valid for `expiresSeconds` (default 24 h) (``InviteReply``).
    case invite(expiresSeconds: Double?)
    /// `join`: accepts another node's invitation (``JoinReply``).
    case join(JoinRequest)
    /// `power`: the power state, its profile and the values in effect, changed first
    /// as the request says (``PowerReply``).
    case power(PowerRequest)
    /// `invites`: the invitations this node issued and who joined by each (``InvitesReply``).
    case invites
    /// `invite_revoke`: revokes the invitation with ID `id` (or its unique start), then
    /// lists them (``InvitesReply``).
    case revokeInvite(id: String?)
    /// `events`: the router's recent events after event `after` (nil: the newest
    /// `limit`), at most `limit` (default 100) (``EventsReply``).
    case events(after: Int?, limit: Int?)
    /// `transports`, `transports_disable`, `transports_enable`: the transports and their
    /// state, changed first as the request says (``TransportsReply``).
    case transports(TransportsRequest)
    /// `dial`: dials an address now and replies once the link is up (``DialReply``).
    case dial(DialRequest)
    /// `known_peers`: the address ledger, every address of every peer met (``KnownPeersReply``).
    case knownPeers
    /// `conversation`: the messages both ways with one peer, oldest first (``ConversationReply``).
    case conversation(MessageQuery)
    /// `conversations`: every peer with messages, with unread counts (``ConversationsReply``).
    case conversations
    /// `read`: marks received messages read (``ReadReply``).
    case read(ReadRequest)
    /// `history_clear`: deletes the finished history of one peer or all (``ClearReply``).
    case historyClear(peer: String?)
    /// `inbox_delete`: deletes one inbox entry by its sequence number, or by its
    /// message ID or the unique start of one (``ClearReply``).
    case inboxDelete(seq: Int?, id: String? = nil)

    /// The command's word on the control socket (`"status"`, `"contacts_add"`, …).
    public var name: String {
        switch self {
        case .status: "status"
        case .peers: "peers"
        case .routes: "routes"
        case .send: "send"
        case .inbox: "inbox"
        case .history: "history"
        case .trace: "trace"
        case .outbox: "outbox"
        case .contacts(let request): request.name
        case .topics: "topics"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .publish: "publish"
        case .settings: "settings"
        case .invite: "invite"
        case .join: "join"
        case .power: "power"
        case .events: "events"
        case .invites: "invites"
        case .revokeInvite: "invite_revoke"
        case .transports(let request): request.name
        case .dial: "dial"
        case .knownPeers: "known_peers"
        case .conversation: "conversation"
        case .conversations: "conversations"
        case .read: "read"
        case .historyClear: "history_clear"
        case .inboxDelete: "inbox_delete"
        }
    }

    /// Every command word the control socket knows.
    public static let names = [
        "status", "peers", "routes", "send", "inbox", "history", "trace", "outbox", "contacts", "contacts_add",
        "contacts_remove",
        "contacts_block", "contacts_unblock", "contacts_allow_only", "subscribe", "unsubscribe", "topics", "publish",
        "settings",
        "invite", "join", "power", "events", "contacts_mute", "contacts_unmute", "invites", "invite_revoke",
        "transports", "transports_disable", "transports_enable", "dial", "known_peers", "contacts_rename",
        "contacts_note",
        "conversation", "conversations", "read", "history_clear", "inbox_delete",
    ]
}

/// The request of `send`: the destination, the payload (``text`` or
/// ``payloadBase64``, or a raw body on the HTTP API) and how to send it.
public struct SendRequest: Sendable, Hashable {
    /// The destination: a 64-hex-character peer ID, its unique start, or a contact's alias.
    public var peer: String?
    /// The payload as UTF-8 text.
    public var text: String?
    /// The payload as base64 (instead of ``text``).
    public var payloadBase64: String?
    /// The message ID to use (32 hex characters), so that a retry is idempotent.
    public var id: String?
    /// How long the message may wait for delivery, in seconds (default
    /// `store.default_expiry_seconds`).
    public var expiresSeconds: Double?
    /// Reply only once the destination's receipt arrived (or the timeout passed).
    public var wait: Bool?
    /// With ``wait``: how long to wait, in seconds (default 60).
    public var timeoutSeconds: Double?
    /// Send it as an emergency (flooded ahead of every queue, within `flood.emergency_per_hour`).
    public var emergency: Bool?

    /// Creates a request.
    public init(
        peer: String? = nil,
        text: String? = nil,
        payloadBase64: String? = nil,
        id: String? = nil,
        expiresSeconds: Double? = nil,
        wait: Bool? = nil,
        timeoutSeconds: Double? = nil,
        emergency: Bool? = nil
    ) {
        self.peer = peer
        self.text = text
        self.payloadBase64 = payloadBase64
        self.id = id
        self.expiresSeconds = expiresSeconds
        self.wait = wait
        self.timeoutSeconds = timeoutSeconds
        self.emergency = emergency
    }
}

/// The request of `inbox`: which received messages, and whether with their payloads.
public struct InboxRequest: Sendable, Hashable {
    /// Only messages with a sequence number above this.
    public var after: Int?
    /// At most this many.
    public var limit: Int?
    /// Whether the reply carries each payload (default true); see ``ControlRequest/payloads``.
    public var payloads: Bool?
    /// Only messages not yet marked read.
    public var unread: Bool?

    /// Creates a request.
    public init(after: Int? = nil, limit: Int? = nil, payloads: Bool? = nil, unread: Bool? = nil) {
        self.after = after
        self.limit = limit
        self.payloads = payloads
        self.unread = unread
    }
}

/// The request of `history` and `outbox`: one peer's messages or everyone's, at most ``limit``.
public struct MessageQuery: Sendable, Hashable {
    /// The peer (ID, its unique start, or alias); nil for every peer.
    public var peer: String?
    /// At most this many (default 100 for `history`, 1000 for `outbox`).
    public var limit: Int?
    /// `history`: only messages whose text contains this.
    public var grep: String?

    /// Creates a request.
    public init(peer: String? = nil, limit: Int? = nil, grep: String? = nil) {
        self.peer = peer
        self.limit = limit
        self.grep = grep
    }
}

/// The request of `read`: which received messages to mark read.
public struct ReadRequest: Sendable, Hashable {
    /// Message IDs (or their unique starts); nil or empty with ``all``.
    public var ids: [String]?
    /// Every unread message (from ``peer`` when given).
    public var all: Bool?
    /// With ``all``: only this peer's messages (ID, its unique start, or alias).
    public var peer: String?

    /// Creates a request.
    public init(ids: [String]? = nil, all: Bool? = nil, peer: String? = nil) {
        self.ids = ids
        self.all = all
        self.peer = peer
    }
}

/// The contacts commands: listing the book, or one change to it. Each replies with
/// the whole book afterwards.
public enum ContactsRequest: Sendable, Hashable {
    /// `contacts`: the book as it is.
    case list
    /// `contacts_add`: names `peer` (a peer ID or its unique start) `alias`, with a free note.
    case add(alias: String?, peer: String?, note: String?)
    /// `contacts_remove`: removes the contact named (alias or peer).
    case remove(String?)
    /// `contacts_block`: drops the peer's messages (a stranger becomes a blocked contact).
    case block(peer: String?)
    /// `contacts_unblock`: accepts the peer's messages again.
    case unblock(peer: String?)
    /// `contacts_allow_only`: accept messages only from contacts (true) or from anyone.
    case allowOnly(Bool?)
    /// `contacts_mute`: the peer's messages (contact or not) raise no notification.
    case mute(peer: String?)
    /// `contacts_unmute`: they raise notifications again.
    case unmute(peer: String?)
    /// `contacts_rename`: gives the contact named `alias` (or a peer) the alias `newAlias`.
    case rename(alias: String?, newAlias: String?)
    /// `contacts_note`: sets the contact's free note (empty: removes it).
    case note(peer: String?, note: String?)

    /// The command's word on the control socket.
    public var name: String {
        switch self {
        case .list: "contacts"
        case .add: "contacts_add"
        case .remove: "contacts_remove"
        case .block: "contacts_block"
        case .unblock: "contacts_unblock"
        case .allowOnly: "contacts_allow_only"
        case .mute: "contacts_mute"
        case .unmute: "contacts_unmute"
        case .rename: "contacts_rename"
        case .note: "contacts_note"
        }
    }
}

/// The request of `publish`: a topic and the payload (``text`` or ``payloadBase64``).
public struct PublishRequest: Sendable, Hashable {
    /// The topic, e.g. `/scmesh/global/v1`.
    public var topic: String?
    /// The payload as UTF-8 text.
    public var text: String?
    /// The payload as base64 (instead of ``text``).
    public var payloadBase64: String?

    /// Creates a request.
    public init(topic: String? = nil, text: String? = nil, payloadBase64: String? = nil) {
        self.topic = topic
        self.text = text
        self.payloadBase64 = payloadBase64
    }
}

/// The request of `settings`: the changes to make first (none: only read them).
/// Changes are saved in the data directory and hold across restarts until ``reset``.
public struct SettingsRequest: Sendable, Hashable {
    /// Switch relaying (= sending and receiving) on or off.
    public var relayEnabled: Bool?
    /// The relay's hourly budget (`relay.max_per_hour`; 0 = no limit).
    public var relayMaxPerHour: Int?
    /// One neighbour's share of it (`relay.neighbour_share`, 0 < share ≤ 1).
    public var relayNeighbourShare: Double?
    /// The battery floor in percent (`relay.battery_floor_percent`, 0…100).
    public var relayBatteryFloorPercent: Int?
    /// What the mDNS transports reveal: `normal`, `cautious` or `paranoid`.
    public var discoveryMode: String?
    /// Drop every run-time change (goes alone): the config's values apply again.
    public var reset: Bool? = nil

    /// Creates a request.
    public init(
        relayEnabled: Bool? = nil,
        relayMaxPerHour: Int? = nil,
        relayNeighbourShare: Double? = nil,
        relayBatteryFloorPercent: Int? = nil,
        discoveryMode: String? = nil,
        reset: Bool? = nil
    ) {
        self.reset = reset
        self.relayEnabled = relayEnabled
        self.relayMaxPerHour = relayMaxPerHour
        self.relayNeighbourShare = relayNeighbourShare
        self.relayBatteryFloorPercent = relayBatteryFloorPercent
        self.discoveryMode = discoveryMode
    }

    /// Whether it changes any relay budget.
    public var changesBudgets: Bool {
        relayMaxPerHour != nil || relayNeighbourShare != nil || relayBatteryFloorPercent != nil
    }
}

/// The request of `join`: another node's invitation and the alias to give that node.
public struct JoinRequest: Sendable, Hashable {
    /// The invitation link (`scmesh:…`) that `invite` made on the other node.
    public var invitation: String?
    /// The alias to give the inviting node (default: its name from the invitation).
    public var alias: String?

    /// Creates a request.
    public init(invitation: String? = nil, alias: String? = nil) {
        self.invitation = invitation
        self.alias = alias
    }
}

/// The request of `power`: the changes to make first (none: only read the state).
/// Changes are saved in the data directory and hold across restarts. Several apply in
/// this order: ``clearOverrides``, ``powerOverride``, then ``profile`` or ``auto``.
public struct PowerRequest: Sendable, Hashable {
    /// One override, `KEY=VALUE`; the keys are ``PowerMonitor/overrideKeys``.
    public var powerOverride: String?
    /// Drop every override: the profile's values apply again.
    public var clearOverrides: Bool?
    /// Pin this profile whatever the power state says.
    public var profile: String?
    /// Unpin the profile: the power state picks it again.
    public var auto: Bool?

    /// Creates a request.
    public init(powerOverride: String? = nil, clearOverrides: Bool? = nil, profile: String? = nil, auto: Bool? = nil) {
        self.powerOverride = powerOverride
        self.clearOverrides = clearOverrides
        self.profile = profile
        self.auto = auto
    }
}
