import Foundation
import MeshCore

/// One request on the control socket as it travels: a JSON object on one line. Every
/// command and its fields are listed in docs/api.md ("Control socket"). The node turns
/// it into a typed ``NodeCommand`` as it arrives (``NodeCommand/init(_:)``), and a
/// client makes it from one (``NodeCommand/wire``).
///
/// ```json
/// {"cmd":"status"}
/// {"cmd":"send","peer":"<64 hex or alias>","text":"hello","wait":true,"timeout_seconds":30}
/// {"cmd":"inbox","after":0,"limit":100}
/// {"cmd":"inbox","payloads":false}
/// {"cmd":"history","peer":"bob","limit":50}
/// {"cmd":"trace","message_id":"<32 hex>"}
/// {"cmd":"contacts_add","alias":"bob","peer":"<64 hex>","note":"from the meetup"}
/// ```
public struct ControlRequest: Codable, Sendable, Hashable {
    /// The command: one of ``NodeCommand/names``.
    public var cmd: String
    /// The peer: a 64-hex-character peer ID or a contact's alias (`send`, `history`,
    /// `outbox`, `contacts_add`, `contacts_remove`, `contacts_block`, `contacts_unblock`).
    public var peer: String?
    /// `send`: the payload as UTF-8 text.
    public var text: String?
    /// `send`: the payload as base64 (instead of `text`).
    public var payloadBase64: String?
    /// `inbox`: only messages with a sequence number above this.
    public var after: Int?
    /// `inbox`, `history`, `outbox`: at most this many.
    public var limit: Int?
    /// `send`: the message ID to use (32 hex characters), so that a retry is
    /// idempotent; `trace`: the message to trace; `inbox_delete`: the message to
    /// delete. As `id`, the former name, it is still read (deprecated), and names the
    /// invitation of `invite_revoke`.
    public var messageID: String? = nil
    /// The former name of ``messageID`` (deprecated for messages), and the invitation
    /// of `invite_revoke`.
    public var id: String?
    /// `send`: how long the message may wait for delivery, in seconds (default
    /// `store.default_expiry_seconds`); `invite`: how long the invitation is valid
    /// (default 86400, 60 to 2592000).
    public var expiresSeconds: Double?
    /// `send`: reply only once the destination's receipt arrived (or the timeout passed).
    public var wait: Bool?
    /// `send` with `wait`: how long to wait, in seconds (default 60).
    public var timeoutSeconds: Double?
    /// `contacts_add`, `contacts_remove`: the contact's alias; `join`: the alias to give
    /// the inviting node (default: its name from the invitation).
    public var alias: String?
    /// `contacts_add`: a free note.
    public var note: String?
    /// `contacts_allow_only`: turn allow-list mode on (true) or off (false).
    public var on: Bool?
    /// The topic of `subscribe`, `unsubscribe` and `publish`.
    public var topic: String?
    /// `settings`: switch relaying (= sending and receiving) on or off at run time.
    public var relayEnabled: Bool?
    /// `settings`: the relay's hourly budget (`relay.max_per_hour`; 0 = no limit).
    public var relayMaxPerHour: Int?
    /// `settings`: one neighbour's share of it (`relay.neighbour_share`, 0 < share ≤ 1).
    public var relayNeighbourShare: Double?
    /// `settings`: the battery floor in percent (`relay.battery_floor_percent`, 0…100).
    public var relayBatteryFloorPercent: Int?
    /// `settings`: what the mDNS transports reveal on the local network, `normal`,
    /// `cautious` or `paranoid` (`transports.mdns.discovery_mode`); kept across restarts.
    public var discoveryMode: String?
    /// `join`: the invitation link (`scmesh:…`) that `invite` made on another node.
    public var invitation: String?
    /// `send`: send it as an emergency (flooded ahead of every queue, within
    /// `flood.emergency_per_hour`; above it the send fails with `rateLimited`).
    public var emergency: Bool?
    /// `inbox`: whether the reply carries each payload (`payload_base64`, and `text`
    /// whatever its size). Default true; false lists the messages without them (their
    /// size, and `text` or `head_base64` as ``InboxReply/Message`` says); a client
    /// then fetches a payload raw from the HTTP API (`GET /api/v1/inbox/{seq}/payload`).
    public var payloads: Bool?
    /// `transports_disable`, `transports_enable`, `dial`: the transport's name (`tcp`, ...).
    public var transport: String? = nil
    /// `dial`: the address in the transport's notation (`192.0.2.7:7420` for TCP).
    public var address: String? = nil
    /// `contacts_rename`: the contact's new alias (`alias` names it as it is now).
    public var newAlias: String? = nil
    /// `settings`: drop every run-time change and go back to the config's values.
    public var reset: Bool? = nil
    /// `inbox`: only messages not yet marked read.
    public var unread: Bool? = nil
    /// `history`: only messages whose text contains this (ASCII letters in any case).
    public var grep: String? = nil
    /// `read`: the message IDs (or their unique starts) to mark read.
    public var ids: [String]? = nil
    /// `read`: mark every received message read (from `peer` when given).
    public var all: Bool? = nil
    /// `inbox_delete`: the sequence number of the inbox entry to delete.
    public var seq: Int? = nil
    /// `power`: one override to set, `KEY=VALUE` (`relay_max_per_hour=100`, `ble_scan_interval_ms=1000`); kept across restarts.
    public var powerOverride: String? = nil
    /// `power`: drop every override, so the profile's values apply again.
    public var clearOverrides: Bool? = nil
    /// `power`: pin this profile (`maximum`, `high`, `standard`, `reduced`, `minimal`).
    public var profile: String? = nil
    /// `power`: unpin the profile, so the power state picks it again.
    public var auto: Bool? = nil

    /// Creates a request.
    public init(
        cmd: String,
        peer: String? = nil,
        text: String? = nil,
        payloadBase64: String? = nil,
        after: Int? = nil,
        limit: Int? = nil,
        id: String? = nil,
        expiresSeconds: Double? = nil,
        wait: Bool? = nil,
        timeoutSeconds: Double? = nil,
        alias: String? = nil,
        note: String? = nil,
        on: Bool? = nil,
        topic: String? = nil,
        relayEnabled: Bool? = nil,
        invitation: String? = nil,
        relayMaxPerHour: Int? = nil,
        relayNeighbourShare: Double? = nil,
        relayBatteryFloorPercent: Int? = nil,
        emergency: Bool? = nil,
        discoveryMode: String? = nil,
        payloads: Bool? = nil
    ) {
        self.cmd = cmd
        self.peer = peer
        self.text = text
        self.payloadBase64 = payloadBase64
        self.after = after
        self.limit = limit
        self.id = id
        self.expiresSeconds = expiresSeconds
        self.wait = wait
        self.timeoutSeconds = timeoutSeconds
        self.alias = alias
        self.note = note
        self.on = on
        self.topic = topic
        self.relayEnabled = relayEnabled
        self.relayMaxPerHour = relayMaxPerHour
        self.relayNeighbourShare = relayNeighbourShare
        self.relayBatteryFloorPercent = relayBatteryFloorPercent
        self.invitation = invitation
        self.emergency = emergency
        self.discoveryMode = discoveryMode
        self.payloads = payloads
    }

    /// The request fields, as they are spelled on the socket.
    public static let fields = CodingKeys.allCases.map { ControlHandler.snakeCase($0.rawValue) }

    /// The fields whose value is a number, and those whose value is a boolean (for
    /// refusal texts).
    static let integerFields: Set<String> = ["after", "limit", "seq"]
    static let numberFields: Set<String> = ["expiresSeconds", "timeoutSeconds"]
    static let booleanFields: Set<String> = [
        "wait", "on", "relayEnabled", "emergency", "payloads", "reset", "unread", "all", "clearOverrides", "auto",
    ]

    enum CodingKeys: String, CodingKey, CaseIterable {
        case cmd, peer, text, payloadBase64, after, limit, id, messageID, expiresSeconds, wait, timeoutSeconds, alias,
            note, on, topic
        case relayEnabled, invitation, relayMaxPerHour, relayNeighbourShare, relayBatteryFloorPercent
        case emergency, discoveryMode, payloads
        case transport, address, newAlias, reset
        case unread, grep, ids, all, seq
        case powerOverride, clearOverrides, profile, auto
    }

    /// The decoder setting (a `String`) that names the command of a request without
    /// `cmd`: the HTTP API's send body is a request whose command its route implies.
    static let impliedCommand = CodingUserInfoKey(rawValue: "scmesh.impliedCommand")!

    /// A request field no command knows (a typo such as `"limt"`): rejected like an
    /// unknown config key rather than ignored.
    struct UnknownField: Error {
        var name: String
    }

    /// Decodes a request, rejecting fields it does not know.
    public init(from decoder: any Decoder) throws {
        let all = try decoder.container(keyedBy: AnyCodingKey.self)
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        if let unknown = all.allKeys.first(where: { !known.contains($0.stringValue) }) {
            throw UnknownField(name: unknown.stringValue)
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if !container.contains(.cmd), let implied = decoder.userInfo[Self.impliedCommand] as? String {
            cmd = implied
        } else {
            cmd = try container.decode(String.self, forKey: .cmd)
        }
        peer = try container.decodeIfPresent(String.self, forKey: .peer)
        text = try container.decodeIfPresent(String.self, forKey: .text)
        payloadBase64 = try container.decodeIfPresent(String.self, forKey: .payloadBase64)
        after = try container.decodeIfPresent(Int.self, forKey: .after)
        limit = try container.decodeIfPresent(Int.self, forKey: .limit)
        id = try container.decodeIfPresent(String.self, forKey: .id)
        messageID = try container.decodeIfPresent(String.self, forKey: .messageID)
        expiresSeconds = try container.decodeIfPresent(Double.self, forKey: .expiresSeconds)
        wait = try container.decodeIfPresent(Bool.self, forKey: .wait)
        timeoutSeconds = try container.decodeIfPresent(Double.self, forKey: .timeoutSeconds)
        alias = try container.decodeIfPresent(String.self, forKey: .alias)
        note = try container.decodeIfPresent(String.self, forKey: .note)
        on = try container.decodeIfPresent(Bool.self, forKey: .on)
        topic = try container.decodeIfPresent(String.self, forKey: .topic)
        relayEnabled = try container.decodeIfPresent(Bool.self, forKey: .relayEnabled)
        relayMaxPerHour = try container.decodeIfPresent(Int.self, forKey: .relayMaxPerHour)
        relayNeighbourShare = try container.decodeIfPresent(Double.self, forKey: .relayNeighbourShare)
        relayBatteryFloorPercent = try container.decodeIfPresent(Int.self, forKey: .relayBatteryFloorPercent)
        invitation = try container.decodeIfPresent(String.self, forKey: .invitation)
        emergency = try container.decodeIfPresent(Bool.self, forKey: .emergency)
        discoveryMode = try container.decodeIfPresent(String.self, forKey: .discoveryMode)
        payloads = try container.decodeIfPresent(Bool.self, forKey: .payloads)
        transport = try container.decodeIfPresent(String.self, forKey: .transport)
        address = try container.decodeIfPresent(String.self, forKey: .address)
        newAlias = try container.decodeIfPresent(String.self, forKey: .newAlias)
        reset = try container.decodeIfPresent(Bool.self, forKey: .reset)
        unread = try container.decodeIfPresent(Bool.self, forKey: .unread)
        grep = try container.decodeIfPresent(String.self, forKey: .grep)
        ids = try container.decodeIfPresent([String].self, forKey: .ids)
        self.all = try container.decodeIfPresent(Bool.self, forKey: .all)
        seq = try container.decodeIfPresent(Int.self, forKey: .seq)
        powerOverride = try container.decodeIfPresent(String.self, forKey: .powerOverride)
        clearOverrides = try container.decodeIfPresent(Bool.self, forKey: .clearOverrides)
        profile = try container.decodeIfPresent(String.self, forKey: .profile)
        self.auto = try container.decodeIfPresent(Bool.self, forKey: .auto)
    }
}
