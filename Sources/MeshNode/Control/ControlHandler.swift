import Foundation
import MeshCore
import MeshCrypto
import MeshStore
import TransportMDNS

/// Answers control requests for one node. Never throws: every problem becomes an
/// `{"ok":false,...}` reply.
///
/// The node's one typed command layer: every ``NodeCommand`` is a function taking its
/// typed request (``SendRequest``, ``MessageQuery``, ...) and returning its typed reply (``StatusReply``, ``SendReply``, ...)
/// or throwing a ``MeshError``. The control socket (``respond(to:)``, JSON lines) and
/// the HTTP API (module `MeshNodeHTTP`) both call these functions.
///
/// One file per group of commands: this one dispatches and answers `status`, `peers`,
/// `routes` and `inbox`; `+Settings`, `+Transports` (transports, dial, known peers),
/// `+Send`, `+History` (history, trace, outbox),
/// `+Contacts`, `+Topics`, `+Invite` (invite, join) and `+Power` the rest.
package struct ControlHandler: Sendable {
    let router: Router
    let store: MeshStore
    let contactFilter: ContactFilter
    let configuration: NodeConfiguration
    let dataDirectory: String
    let startedAt: ContinuousClock.Instant
    /// The node's transports, for their counters.
    var transports: [any Transport] = []
    /// The control socket's own refusals.
    var controlCounters = ControlServer.Counters()
    /// Where the HTTP API listens (for `status`).
    var httpEndpoint = HTTPEndpoint()
    /// The key that signs `invite`'s invitations (nil: the node cannot invite).
    var inviter: NodeIdentity? = nil
    /// The power state and profile (`power`); nil: the node has none.
    var powerMonitor: PowerMonitor? = nil
    /// The router's recent events (`events`); nil: the node keeps none.
    var events: EventLog? = nil
    /// Switches transports off and on (`transports_disable`, `transports_enable`); nil:
    /// the node cannot.
    var transportControl: TransportControl? = nil
    /// The config as its file says, before the settings saved at run time were
    /// applied (what `settings` compares with and `reset` goes back to).
    var configured: NodeConfiguration? = nil

    /// The transports in use now (a transport enabled again is a new instance).
    var liveTransports: [any Transport] { transportControl?.all ?? transports }

    var inbox: StoreInbox { store.inbox }

    /// A failure that concerns a message with an ID: the reply carries `message_id`.
    package struct MessageFailure: Error {
        /// What went wrong.
        package var error: MeshError
        /// The message it concerns.
        package var messageID: MessageID
    }

    /// The reply line (without newline) to one request line.
    func respond(to line: [UInt8]) async -> [UInt8] {
        let command: NodeCommand
        switch Self.parse(line) {
        case .success(let parsed): command = parsed
        case .failure(let message): return ControlJSON.failure(message, code: MeshError.Code.controlRequestFailed.name)
        }
        do {
            return try await reply(to: command)
        } catch let failure as MessageFailure {
            return ControlJSON.failure(
                failure.error.message,
                code: failure.error.code.name,
                messageID: failure.messageID
            )
        } catch let error as MeshError {
            return ControlJSON.failure(error.message, code: error.code.name)
        } catch {
            // Not a MeshError: an internal failure (encoding a reply); its text is not for clients.
            return ControlJSON.failure(
                "the node could not answer \"\(command.name)\"",
                code: MeshError.Code.controlRequestFailed.name
            )
        }
    }

    /// Runs one command and encodes its reply as the socket's `{"ok":true,…}` line.
    /// - Throws: the command's ``MeshError`` or ``MessageFailure``.
    package func reply(to command: NodeCommand) async throws -> [UInt8] {
        switch command {
        case .status: try ControlJSON.success(await status())
        case .peers: try ControlJSON.success(await peers())
        case .routes: try ControlJSON.success(await routes())
        case .send(let request): try ControlJSON.success(await send(request))
        case .inbox(let request): try ControlJSON.success(await inbox(request))
        case .history(let query): try ControlJSON.success(await history(query))
        case .trace(let id): try ControlJSON.success(await trace(id: id))
        case .outbox(let query): try ControlJSON.success(await outbox(query))
        case .contacts(let request): try ControlJSON.success(await contacts(request))
        case .topics: try ControlJSON.success(await topics())
        case .subscribe(let topic): try ControlJSON.success(await subscribe(topic: topic))
        case .unsubscribe(let topic): try ControlJSON.success(await unsubscribe(topic: topic))
        case .publish(let request): try ControlJSON.success(await publish(request))
        case .settings(let request): try ControlJSON.success(await settings(request))
        case .invite(let expiresSeconds): try ControlJSON.success(await invite(expiresSeconds: expiresSeconds))
        case .join(let request): try ControlJSON.success(await join(request))
        case .power(let request): try ControlJSON.success(try power(request))
        case .events(let after, let limit): try ControlJSON.success(try events(after: after, limit: limit))
        case .invites: try ControlJSON.success(await invites())
        case .revokeInvite(let id): try ControlJSON.success(await revokeInvite(id))
        case .transports(let request): try ControlJSON.success(await transports(request))
        case .dial(let request): try ControlJSON.success(await dial(request))
        case .knownPeers: try ControlJSON.success(await knownPeers())
        case .conversation(let query): try ControlJSON.success(await conversation(query))
        case .conversations: try ControlJSON.success(await conversations())
        case .read(let request): try ControlJSON.success(await markRead(request))
        case .historyClear(let peer): try ControlJSON.success(await historyClear(peer: peer))
        case .inboxDelete(let seq, let id): try ControlJSON.success(await inboxDelete(seq: seq, id: id))
        }
    }

    /// `status`: identity, uptime, relay switch, transports, counts and counters.
    package func status() async throws -> StatusReply {
        let elapsed = ContinuousClock.now - startedAt
        let peerCount = await router.peers().count
        var reply = StatusReply(
            peerID: router.localPeerID,
            name: configuration.node.name,
            dataDir: dataDirectory,
            uptimeSeconds: Double(elapsed.milliseconds) / 1000,
            relayEnabled: router.relayEnabled,
            transports: await router.transportStatus(),
            peerCount: peerCount,
            inboxCount: try await inbox.count,
            outboxCount: try await store.history.pendingTotals().messages,
            stats: await router.stats(),
            transportCounters: transportCounters(),
            httpAddress: httpEndpoint.address,
            httpProblem: httpEndpoint.problem,
            wireVersion: Int(Frame.version),
            features: router.features.names,
            httpEnabled: configuration.http.enabled,
            httpNote: httpEndpoint.note,
            unread: try await store.history.unreadCount()
        )
        reply.networkQuality = NetworkQuality(peerCount: peerCount).rawValue
        reply.maxMessageSize = maximumPayloadSize
        return reply
    }

    /// `peers`: every peer with a live link, links best first.
    package func peers() async -> PeersReply {
        let peers = await router.peers()
        return PeersReply(
            peers: peers,
            aliases: await aliases(of: peers.map(\.peer)),
            names: names(of: peers.map(\.peer))
        )
    }

    /// `routes`: the route table.
    package func routes() async -> RoutesReply {
        let routes = await router.routes()
        let peers = routes.flatMap { [$0.destination, $0.nextHop] }
        return RoutesReply(routes: routes, aliases: await aliases(of: peers), names: names(of: peers))
    }

    /// The names `peers` claimed in their last handshake, by hex ID; nil when none did.
    func names(of peers: [PeerID]) -> [String: String]? {
        let heard = router.heardNames()
        var named: [String: String] = [:]
        for peer in peers { if let name = heard[peer] { named[peer.hex] = name } }
        return named.isEmpty ? nil : named
    }

    /// The contact aliases of `peers`, by hex ID; nil when none is a contact (or the
    /// contacts cannot be read: the listing still answers).
    func aliases(of peers: [PeerID]) async -> [String: String]? {
        guard let all = try? await aliases() else { return nil }
        var named: [String: String] = [:]
        for peer in peers { if let alias = all[peer] { named[peer.hex] = alias } }
        return named.isEmpty ? nil : named
    }

    /// `inbox`: received messages with a sequence number above `after`, at most `limit`;
    /// with `payloads` false, without their payloads (a payload kept in a file is not
    /// read, but for its first ``InboxReply/headBytes`` bytes).
    package func inbox(_ request: InboxRequest) async throws -> InboxReply {
        if let after = request.after, after < 0 {
            throw MeshError(.invalidArgument, "\"after\" must be 0 or more, got \(after)")
        }
        if let limit = request.limit, limit < 0 {
            throw MeshError(.invalidArgument, "\"limit\" must be 0 or more, got \(limit)")
        }
        let limit = request.limit ?? .max
        let aliases = try await aliases()
        let names = router.heardNames()
        // Each sender by its contact alias and claimed name too, as history names peers.
        func named(_ message: InboxReply.Message) -> InboxReply.Message {
            var message = message
            message.alias = aliases[message.from]
            message.name = names[message.from]
            return message
        }
        guard request.payloads == false else {
            let entries = try await inbox.entries(
                after: request.after ?? 0,
                limit: limit,
                unread: request.unread == true
            )
            return InboxReply(
                messages: try await markingUnread(entries.map(Self.message).map(named)),
                totalReceived: try await inbox.totalReceived
            )
        }
        let summaries = try await inbox.summaries(
            after: request.after ?? 0,
            limit: limit,
            headBytes: InboxReply.headBytes,
            unread: request.unread == true
        )
        return InboxReply(
            messages: try await markingUnread(summaries.map(Self.message).map(named)),
            totalReceived: try await inbox.totalReceived
        )
    }

    /// The payload of one inbox entry, for a raw download: in memory when small, else
    /// its file opened for reading in pieces.
    /// - Throws: `.invalidArgument` when the inbox holds no such entry.
    package func inboxPayload(sequence: Int) async throws -> StoreInbox.Payload {
        guard let payload = try await inbox.payload(sequence: sequence) else {
            throw MeshError(
                .invalidArgument,
                "the inbox holds no message with sequence number \(sequence) (it was removed, or never arrived); list them with inbox"
            )
        }
        return payload
    }

    private func transportCounters() -> [String: [String: Int]] {
        var counters: [String: [String: Int]] = [:]
        for case let transport as any TransportCounting in liveTransports {
            guard let name = (transport as? any Transport)?.name else { continue }
            counters[name] = transport.counters
        }
        let control = controlCounters.all
        if !control.isEmpty { counters["control"] = control }
        let contacts = contactFilter.counters
        if !contacts.isEmpty { counters["contacts"] = contacts }
        return counters
    }

    static func message(_ entry: StoreInbox.Entry) -> InboxReply.Message {
        let payload = entry.message.payload
        return InboxReply.Message(
            seq: entry.sequence,
            id: entry.message.id,
            from: entry.message.from,
            transport: entry.message.transport,
            receivedAt: entry.receivedAt,
            sentAt: entry.message.sentMillis.map { Date(timeIntervalSince1970: Double($0) / 1000) },
            bytes: payload.count,
            text: String(validating: payload, as: UTF8.self),
            payloadBase64: Data(payload).base64EncodedString(),
            headBase64: nil,
            topic: entry.message.topic,
            emergency: entry.message.emergency ? true : nil,
            broadcast: entry.message.topic == TopicName.emergency ? true : nil
        )
    }

    /// A message of a listing without payloads: `text` when the whole payload is at
    /// hand and UTF-8, else the base64 of its first bytes.
    static func message(_ summary: StoreInbox.Summary) -> InboxReply.Message {
        let text = summary.isWhole ? String(validating: summary.head, as: UTF8.self) : nil
        return InboxReply.Message(
            seq: summary.sequence,
            id: summary.id,
            from: summary.from,
            transport: summary.transport,
            receivedAt: summary.receivedAt,
            sentAt: summary.sentAt,
            bytes: summary.byteCount,
            text: text,
            payloadBase64: nil,
            headBase64: text == nil ? Data(summary.head.prefix(InboxReply.headBytes)).base64EncodedString() : nil,
            topic: summary.topic,
            emergency: summary.emergency ? true : nil,
            broadcast: summary.topic == TopicName.emergency ? true : nil
        )
    }

    /// A request line, decoded or refused.
    package enum ParsedRequest: Sendable {
        /// The command.
        case success(NodeCommand)
        /// Why it was refused, as the reply's `error` says.
        case failure(String)
    }

    /// Decodes one request line into its command (unknown fields and commands refused).
    /// - Parameter implied: the command of a request without `cmd` (the HTTP API's
    ///   send body); nil: `cmd` is required.
    package static func parse(_ line: [UInt8], implied: String? = nil) -> ParsedRequest {
        let decoder = ControlJSON.decoder()
        if let implied { decoder.userInfo[ControlRequest.impliedCommand] = implied }
        let request: ControlRequest
        do {
            request = try decoder.decode(ControlRequest.self, from: Data(line))
        } catch {
            return .failure(describeParseError(error))
        }
        if let implied, request.cmd != implied {
            return .failure("this route only takes \"\(implied)\"; \"cmd\" must be \"\(implied)\" or absent")
        }
        do {
            return .success(try NodeCommand(request))
        } catch {
            return .failure(error.message)
        }
    }

    /// What is wrong with a request that did not decode, in the socket's own terms
    /// (never the decoder's internal description).
    static func describeParseError(_ error: any Error) -> String {
        let example = "send one JSON object per line, e.g. {\"cmd\":\"status\"}"
        if let unknown = error as? ControlRequest.UnknownField {
            return
                "unknown request field \"\(Self.snakeCase(unknown.name))\" (known fields: \(ControlRequest.fields.joined(separator: ", ")))"
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?:
            return "request has no \"\(Self.snakeCase(key.stringValue))\" field; \(example)"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            guard let key = context.codingPath.first, context.codingPath.count == 1 else {
                return "request is not a JSON object; \(example)"
            }
            let expected =
                ControlRequest.integerFields.contains(key.stringValue)
                ? "an integer"
                : ControlRequest.numberFields.contains(key.stringValue)
                    ? "a number"
                    : ControlRequest.booleanFields.contains(key.stringValue) ? "true or false" : "a string"
            return "request field \"\(Self.snakeCase(key.stringValue))\" must be \(expected)"
        default:
            return "request is not a JSON object; \(example)"
        }
    }

    /// `payloadBase64` → `payload_base64`, `messageID` → `message_id`: a decoded key as
    /// the client spelled it.
    static func snakeCase(_ name: String) -> String {
        var result = ""
        let name = name.hasSuffix("ID") ? name.dropLast(2) + "Id" : name
        for character in name {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}
