import Foundation
import MeshCore
import MeshCrypto
import MeshStore

extension ControlHandler {
    /// How long `send` with `wait` waits when the request names no timeout.
    static let defaultWaitTimeout: Double = 60

    /// `send`: queues the message (durably) and replies with its ID; with `wait`, replies
    /// once the destination's receipt arrived. Every failure after the ID is known
    /// carries it (`message_id`), and says whether the message stays queued.
    ///
    /// - Parameter rawPayload: the payload as bytes (the HTTP API's raw body, the
    ///   socket's binary body), instead of the request's `text` or `payload_base64`.
    package func send(_ request: SendRequest, rawPayload: [UInt8]? = nil) async throws -> SendReply {
        let payload: [UInt8]
        switch (request.text, request.payloadBase64) {
        case (nil, nil) where rawPayload != nil: payload = rawPayload!
        case (_, _) where rawPayload != nil:
            throw MeshError(
                .invalidArgument,
                "send takes the payload as a raw body or as \"text\"/\"payload_base64\", not both"
            )
        case (let text?, nil): payload = Array(text.utf8)
        case (nil, let base64?):
            guard let data = Data(base64Encoded: base64) else {
                throw MeshError(.invalidArgument, "\"payload_base64\" is not valid base64")
            }
            payload = Array(data)
        case (nil, nil): throw MeshError(.invalidArgument, "send needs \"text\" or \"payload_base64\"")
        case (_?, _?): throw MeshError(.invalidArgument, "send takes \"text\" or \"payload_base64\", not both")
        }
        guard payload.count <= maximumPayloadSize else {
            throw Self.payloadTooLarge(payload.count, limit: maximumPayloadSize)
        }
        return try await send(request, payload: .bytes(payload))
    }

    /// `send` of a payload already stored durably (an upload written to the outbox's
    /// payload directory while it arrived: ``receivePayload(_:declaredBytes:)``). The
    /// request must carry no `text` or `payload_base64`. Takes ownership of `stored`:
    /// it is queued, or removed when the send fails.
    package func send(_ request: SendRequest, stored: any StoredPayload) async throws -> SendReply {
        let checked: CheckedSend
        do {
            checked = try await checkSend(request)
        } catch {
            stored.discard()
            throw error
        }
        return try await send(checked, stored: stored)
    }

    /// `send` of a request checked by ``checkSend(_:)`` before its payload was read,
    /// with that payload already stored durably. Takes ownership of `stored`: it is
    /// queued, or removed when the send fails.
    package func send(_ checked: CheckedSend, stored: any StoredPayload) async throws -> SendReply {
        try await send(checked, payload: .stored(stored))
    }

    /// A send request whose peer and parameters were resolved and checked before its
    /// payload was read: an upload to an unknown alias or with a bad parameter is
    /// refused before its body is stored.
    package struct CheckedSend: Sendable {
        /// The destination.
        package var peer: PeerID
        /// Its alias when it is a contact.
        package var alias: String?
        /// The message ID (the request's or a new one).
        package var id: MessageID
        /// The request's expiry; nil for the store's default.
        package var expiresAfter: Duration?
        /// Whether the reply waits for the delivery receipt.
        package var wait: Bool
        /// How long it waits, in seconds.
        package var timeout: Double
        /// Whether it goes as an emergency.
        package var emergency: Bool
    }

    /// Resolves the peer and checks every parameter of a send request whose payload
    /// comes separately (a raw body), before that payload is read; with
    /// `declaredBytes` (the body's announced length) also what the router would refuse
    /// for that size (``Router/checkSend(to:bytes:options:)``).
    /// - Throws: `.invalidArgument` naming the bad field (a `text` or `payload_base64`
    ///   besides the raw body included), as ``send(_:rawPayload:)`` would; the router's
    ///   refusal (`.storeFull`, `.rateLimited`, `.relayDisabled`, `.messageTooLarge`) as
    ///   a ``MessageFailure`` naming the message ID.
    package func checkSend(_ request: SendRequest, declaredBytes: Int? = nil) async throws -> CheckedSend {
        guard request.text == nil, request.payloadBase64 == nil else {
            throw MeshError(
                .invalidArgument,
                "send takes the payload as a raw body or as \"text\"/\"payload_base64\", not both"
            )
        }
        let checked = try await checkedParameters(request)
        if let declaredBytes {
            // What the router would refuse for this size (relaying off, too large, the
            // emergency limit, no room in the outbox) is refused before the body is read.
            do {
                try await router.checkSend(
                    to: checked.peer,
                    bytes: declaredBytes,
                    options: SendOptions(
                        id: checked.id,
                        expiresAfter: checked.expiresAfter,
                        emergency: checked.emergency
                    )
                )
            } catch let error as MeshError {
                throw MessageFailure(error: Self.notQueued(error, id: checked.id), messageID: checked.id)
            }
        }
        return checked
    }

    /// A send's payload: bytes in memory, or a stored upload.
    enum SendPayload {
        case bytes([UInt8])
        case stored(any StoredPayload)

        var count: Int {
            switch self {
            case .bytes(let bytes): bytes.count
            case .stored(let stored): stored.byteCount
            }
        }
    }

    private func send(_ request: SendRequest, payload: SendPayload) async throws -> SendReply {
        try await send(try await checkedParameters(request), payload: payload)
    }

    /// The request's peer (resolved and checked) and send parameters.
    private func checkedParameters(_ request: SendRequest) async throws -> CheckedSend {
        let (peer, alias) = try await resolvePeer(request.peer, for: "send")
        try Self.requireValidKey(peer)
        let (id, expiresAfter, wait, timeout) = try Self.sendParameters(request)
        return CheckedSend(
            peer: peer,
            alias: alias,
            id: id,
            expiresAfter: expiresAfter,
            wait: wait,
            timeout: timeout,
            emergency: request.emergency ?? false
        )
    }

    private func send(_ checked: CheckedSend, payload: SendPayload) async throws -> SendReply {
        let (peer, alias, id, wait, timeout) = (checked.peer, checked.alias, checked.id, checked.wait, checked.timeout)
        let started = ContinuousClock.now
        // Asked before the send: a message that was flooded made its peer no better known.
        let warning = try await unknownDestinationWarning(peer, alias: alias)
        do {
            let options = SendOptions(id: id, expiresAfter: checked.expiresAfter, emergency: checked.emergency)
            switch payload {
            case .bytes(let bytes):
                _ = try await router.send(to: peer, payload: bytes, options: options)
                // A message sealed before it was queued keeps its text all the same.
                _ = try? await store.history.keepText(of: id, payload: bytes)
            case .stored(let stored): _ = try await router.send(to: peer, stored: stored, options: options)
            }
        } catch let error as MeshError {
            throw MessageFailure(error: Self.notQueued(error, id: id), messageID: id)
        }
        guard wait else {
            let record = await router.status(of: id)
            return SendReply(
                messageID: id,
                peer: peer,
                alias: alias,
                bytes: payload.count,
                status: record?.status ?? .queued,
                transport: record?.transport,
                warning: warning
            )
        }
        let record: OutboundRecord
        do {
            record = try await router.waitForStatus(
                of: id,
                until: .delivered,
                timeout: .milliseconds(Int64(timeout * 1000))
            )
        } catch let error as MeshError where error.code == .timedOut {
            let now = await router.status(of: id)
            let connected = await router.peers().contains { $0.peer == peer && !$0.links.isEmpty }
            let attempts = now?.attempts ?? 0
            var state = "status \(now?.status.name ?? "queued"), \(attempts) attempt\(attempts == 1 ? "" : "s")"
            if let reason = now?.reason { state += ", last: \(reason)" }
            let situation =
                now?.status == .sent
                ? "the next hop has it; the receipt may still come"
                : connected
                    ? "it stays in the outbox and is retried"
                    : "no link to the peer is up; it stays in the outbox and goes out when one appears"
            throw MessageFailure(
                error: MeshError(
                    .timedOut,
                    "message \(id.hex) to \(describe(peer, alias)) not delivered within \(Self.seconds(timeout)) (\(state)): \(situation). `scmesh history --trace \(id.hex)` shows its trace; sending again with --id \(id.hex) makes no duplicate"
                ),
                messageID: id
            )
        } catch let error as MeshError {
            throw MessageFailure(error: error, messageID: id)
        }
        guard record.status == .delivered else {
            let why = record.reason.map { ": \($0)" } ?? ""
            throw MessageFailure(
                error: MeshError(
                    .deliveryFailed,
                    "message \(id.hex) to \(describe(peer, alias)) \(record.status)\(why); `scmesh history --trace \(id.hex)` shows its trace, and sending again with --id \(id.hex) queues it again"
                ),
                messageID: id
            )
        }
        let waited = ContinuousClock.now - started
        return SendReply(
            messageID: id,
            peer: peer,
            alias: alias,
            bytes: payload.count,
            status: record.status,
            transport: record.transport,
            waitedSeconds: Double(waited.milliseconds) / 1000
        )
    }

    /// Refuses a destination that is not an Ed25519 public key (a point on the curve):
    /// no node can have it, so a message to it could never be delivered or sealed.
    /// - Throws: `.invalidArgument`; nothing is queued.
    static func requireValidKey(_ peer: PeerID) throws {
        guard Sodium.ed25519PublicKeyToX25519(peer.bytes) != nil else {
            throw MeshError(
                .invalidArgument,
                "\(peer.hex) is not a valid peer ID: a peer ID is a node's Ed25519 public key, and these 64 hex characters are not one (check for a typo; `scmesh identity` on the peer's machine prints its ID); nothing was queued"
            )
        }
    }

    /// A warning when this node knows nothing of `peer`: not a contact, no link, no
    /// route, and no address ever seen. The message is queued all the same (the peer
    /// may appear later), but a typo in a full peer ID looks exactly like this.
    func unknownDestinationWarning(_ peer: PeerID, alias: String?) async throws -> String? {
        if alias != nil { return nil }
        if await router.peers().contains(where: { $0.peer == peer }) { return nil }
        if await router.routes().contains(where: { $0.destination == peer }) { return nil }
        if ((try? await store.ledger.all()) ?? []).contains(where: { $0.peer == peer }) { return nil }
        return
            "\(peer.hex) is unknown to this node (not a contact, no route to it, never seen): the message waits until it appears; check the ID, or add it with `scmesh contacts add`"
    }

    /// A send request's message ID (the caller's or a new one), expiry, whether it
    /// waits, and how long.
    /// - Throws: `.invalidArgument` naming the bad field.
    static func sendParameters(_ request: SendRequest) throws -> (MessageID, Duration?, Bool, Double) {
        let id: MessageID
        if let text = request.id {
            guard let parsed = MessageID(hex: text) else {
                throw MeshError(
                    .invalidArgument,
                    "\"id\" must be a message ID of 32 hex characters, got \"\(text.prefix(80))\""
                )
            }
            id = parsed
        } else {
            // Chosen here rather than by the router, so that every failure can name it.
            id = MessageID.random()
        }
        let expiresAfter = try request.expiresSeconds.map { seconds throws(MeshError) -> Duration in
            guard seconds.isFinite, seconds > 0, seconds <= 10 * 365 * 86_400 else {
                throw MeshError(
                    .invalidArgument,
                    "\"expires_seconds\" must be a number of seconds above 0 and at most ten years, got \(Self.number(seconds))"
                )
            }
            return .milliseconds(Int64(seconds * 1000))
        }
        let wait = request.wait ?? (request.timeoutSeconds != nil)
        let timeout = request.timeoutSeconds ?? Self.defaultWaitTimeout
        guard timeout.isFinite, timeout > 0, timeout <= 86_400 else {
            throw MeshError(
                .invalidArgument,
                "\"timeout_seconds\" must be a number of seconds above 0 and at most 86400 (one day), got \(Self.number(timeout))"
            )
        }
        return (id, expiresAfter, wait, timeout)
    }

    /// A refusal of the queue, with the message ID and what it means for a retry.
    static func notQueued(_ error: MeshError, id: MessageID) -> MeshError {
        // The router's words name the config key; at run time the switch is a command.
        let message =
            error.code == .relayDisabled
            ? "relaying is switched off, so this node neither sends nor receives (`scmesh settings --relay on` switches it on; relay.enabled: true in the config keeps it on after a restart)"
            : error.message
        let text = message.contains(id.hex) ? message : "message \(id.hex) not queued: \(message)"
        return MeshError(error.code, text, cause: error)
    }

    /// `0`, `2.5`: a number as a user typed it, without a trailing `.0`.
    static func number(_ value: Double) -> String {
        value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// `peer` or `alias (peer)` for messages.
    func describe(_ peer: PeerID, _ alias: String?) -> String {
        alias.map { "\($0) (\(peer.hex))" } ?? peer.hex
    }

    /// `12 s`, `0.5 s`.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// A peer named in a request: a 64-hex-character peer ID, the unique start (4+ hex
    /// characters) of a known peer's ID, or a contact's alias, tried in that order.
    /// Returns the peer and its alias when it is a contact.
    /// - Throws: `.invalidArgument` naming what was given and what is accepted.
    func resolvePeer(_ text: String?, for command: String) async throws -> (PeerID, String?) {
        guard let text, !text.isEmpty else {
            throw MeshError(
                .invalidArgument,
                "\(command) needs \"peer\": a 64-hex-character peer ID or a contact's alias"
            )
        }
        if let peer = PeerID(hex: text) {
            return (peer, try await store.contacts.contact(peer: peer)?.alias)
        }
        // A peer ID prefix before an alias: an alias (from an invitation's name) could
        // otherwise take over the prefix of a contact's ID.
        if let peer = try await resolvePeerPrefix(text, for: command) {
            return (peer, try await store.contacts.contact(peer: peer)?.alias)
        }
        if let contact = try await store.contacts.contact(alias: text) {
            return (contact.peer, contact.alias)
        }
        if text.count == 64 || text.allSatisfy(\.isHexDigit) && text.count > 16 {
            throw MeshError(
                .invalidArgument,
                "\"peer\" must be a peer ID (64 hex characters, or the start of a known one) or a contact's alias; no known peer's ID starts with \"\(text.prefix(80))\""
            )
        }
        throw MeshError(
            .invalidArgument,
            "\"peer\": no contact has the alias \"\(text.prefix(80))\" and no known peer's ID starts with it (a peer ID is 64 hex characters; its first 4 or more are enough); `scmesh contacts list` shows the aliases"
        )
    }
}
