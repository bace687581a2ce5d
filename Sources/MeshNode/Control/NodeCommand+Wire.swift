import MeshCore

extension NodeCommand {
    /// The command a control-socket request names, with the request fields it reads
    /// (fields another command reads are ignored).
    /// - Throws: `.controlRequestFailed` naming the known commands when `cmd` is none of them.
    public init(_ request: ControlRequest) throws(MeshError) {
        switch request.cmd {
        case "status": self = .status
        case "peers": self = .peers
        case "routes": self = .routes
        case "send":
            self = .send(
                SendRequest(
                    peer: request.peer,
                    text: request.text,
                    payloadBase64: request.payloadBase64,
                    id: request.messageID ?? request.id,
                    expiresSeconds: request.expiresSeconds,
                    wait: request.wait,
                    timeoutSeconds: request.timeoutSeconds,
                    emergency: request.emergency
                )
            )
        case "inbox":
            self = .inbox(
                InboxRequest(
                    after: request.after,
                    limit: request.limit,
                    payloads: request.payloads,
                    unread: request.unread
                )
            )
        case "history": self = .history(MessageQuery(peer: request.peer, limit: request.limit, grep: request.grep))
        case "trace": self = .trace(id: request.messageID ?? request.id)
        case "outbox": self = .outbox(MessageQuery(peer: request.peer, limit: request.limit))
        case "contacts": self = .contacts(.list)
        case "contacts_add": self = .contacts(.add(alias: request.alias, peer: request.peer, note: request.note))
        case "contacts_remove": self = .contacts(.remove(request.alias ?? request.peer))
        case "contacts_block": self = .contacts(.block(peer: request.peer))
        case "contacts_unblock": self = .contacts(.unblock(peer: request.peer))
        case "contacts_allow_only": self = .contacts(.allowOnly(request.on))
        case "contacts_mute": self = .contacts(.mute(peer: request.peer))
        case "contacts_unmute": self = .contacts(.unmute(peer: request.peer))
        case "contacts_rename":
            self = .contacts(.rename(alias: request.alias ?? request.peer, newAlias: request.newAlias))
        case "contacts_note": self = .contacts(.note(peer: request.peer ?? request.alias, note: request.note))
        case "topics": self = .topics
        case "subscribe": self = .subscribe(topic: request.topic)
        case "unsubscribe": self = .unsubscribe(topic: request.topic)
        case "publish":
            self = .publish(
                PublishRequest(topic: request.topic, text: request.text, payloadBase64: request.payloadBase64)
            )
        case "settings":
            self = .settings(
                SettingsRequest(
                    relayEnabled: request.relayEnabled,
                    relayMaxPerHour: request.relayMaxPerHour,
                    relayNeighbourShare: request.relayNeighbourShare,
                    relayBatteryFloorPercent: request.relayBatteryFloorPercent,
                    discoveryMode: request.discoveryMode,
                    reset: request.reset
                )
            )
        case "invite": self = .invite(expiresSeconds: request.expiresSeconds)
        case "join": self = .join(JoinRequest(invitation: request.invitation, alias: request.alias))
        case "power":
            self = .power(
                PowerRequest(
                    powerOverride: request.powerOverride,
                    clearOverrides: request.clearOverrides,
                    profile: request.profile,
                    auto: request.auto
                )
            )
        case "events": self = .events(after: request.after, limit: request.limit)
        case "invites": self = .invites
        case "invite_revoke": self = .revokeInvite(id: request.id)
        case "transports": self = .transports(.list)
        case "transports_disable": self = .transports(.disable(request.transport))
        case "transports_enable": self = .transports(.enable(request.transport))
        case "dial":
            self = .dial(
                DialRequest(
                    transport: request.transport,
                    address: request.address,
                    timeoutSeconds: request.timeoutSeconds
                )
            )
        case "known_peers": self = .knownPeers
        case "conversation": self = .conversation(MessageQuery(peer: request.peer, limit: request.limit))
        case "conversations": self = .conversations
        case "read": self = .read(ReadRequest(ids: request.ids, all: request.all, peer: request.peer))
        case "history_clear": self = .historyClear(peer: request.peer)
        case "inbox_delete": self = .inboxDelete(seq: request.seq, id: request.messageID ?? request.id)
        default:
            throw MeshError(
                .controlRequestFailed,
                "unknown cmd \"\(request.cmd)\" (known: \(Self.names.joined(separator: ", ")))"
            )
        }
    }

    /// The command as a control-socket request: the line ``ControlClient`` sends.
    public var wire: ControlRequest {
        var request = ControlRequest(cmd: name)
        switch self {
        case .status, .peers, .routes, .topics, .invites, .knownPeers, .transports(.list), .conversations:
            break
        case .send(let send):
            request.peer = send.peer
            request.text = send.text
            request.payloadBase64 = send.payloadBase64
            request.messageID = send.id
            request.expiresSeconds = send.expiresSeconds
            request.wait = send.wait
            request.timeoutSeconds = send.timeoutSeconds
            request.emergency = send.emergency
        case .inbox(let inbox):
            request.after = inbox.after
            request.limit = inbox.limit
            request.payloads = inbox.payloads
            request.unread = inbox.unread
        case .history(let query), .outbox(let query), .conversation(let query):
            request.peer = query.peer
            request.limit = query.limit
            request.grep = query.grep
        case .read(let read):
            request.ids = read.ids
            request.all = read.all
            request.peer = read.peer
        case .historyClear(let peer):
            request.peer = peer
        case .inboxDelete(let seq, let id):
            request.seq = seq
            request.messageID = id
        case .trace(let id):
            request.messageID = id
        case .contacts(.list):
            break
        case .contacts(.add(let alias, let peer, let note)):
            request.alias = alias
            request.peer = peer
            request.note = note
        case .contacts(.remove(let name)):
            request.alias = name
        case .contacts(.block(let peer)), .contacts(.unblock(let peer)), .contacts(.mute(let peer)),
            .contacts(.unmute(let peer)):
            request.peer = peer
        case .contacts(.allowOnly(let on)):
            request.on = on
        case .contacts(.rename(let alias, let newAlias)):
            request.alias = alias
            request.newAlias = newAlias
        case .contacts(.note(let peer, let note)):
            request.peer = peer
            request.note = note
        case .transports(.disable(let name)), .transports(.enable(let name)):
            request.transport = name
        case .dial(let dial):
            request.transport = dial.transport
            request.address = dial.address
            request.timeoutSeconds = dial.timeoutSeconds
        case .subscribe(let topic), .unsubscribe(let topic):
            request.topic = topic
        case .publish(let publish):
            request.topic = publish.topic
            request.text = publish.text
            request.payloadBase64 = publish.payloadBase64
        case .settings(let settings):
            request.relayEnabled = settings.relayEnabled
            request.relayMaxPerHour = settings.relayMaxPerHour
            request.relayNeighbourShare = settings.relayNeighbourShare
            request.relayBatteryFloorPercent = settings.relayBatteryFloorPercent
            request.discoveryMode = settings.discoveryMode
            request.reset = settings.reset
        case .power(let power):
            request.powerOverride = power.powerOverride
            request.clearOverrides = power.clearOverrides
            request.profile = power.profile
            request.auto = power.auto
        case .invite(let expiresSeconds):
            request.expiresSeconds = expiresSeconds
        case .join(let join):
            request.invitation = join.invitation
            request.alias = join.alias
        case .revokeInvite(let id):
            request.id = id
        case .events(let after, let limit):
            request.after = after
            request.limit = limit
        }
        return request
    }
}

extension NodeCommand: Codable {
    /// Decodes a control-socket request (``ControlRequest``, unknown fields refused) into its command.
    public init(from decoder: any Decoder) throws {
        self = try NodeCommand(ControlRequest(from: decoder))
    }

    /// Encodes the command as its control-socket request (``wire``).
    public func encode(to encoder: any Encoder) throws {
        try wire.encode(to: encoder)
    }
}
