import DequeModule
import Synchronization

/// Where the router keeps the messages this node sends, from ``Router/send(to:payload:options:)``
/// until they are delivered, failed or expired. The delivery pipeline takes (claims)
/// a message from the queue to send it and records every step, so that queued, sent
/// and delivered are distinct states; messages left queued (e.g. loaded by a
/// persistent queue after a restart) are claimed and sent when a link to their
/// destination comes up.
///
/// ``InMemoryOutboundQueue`` is the default; a persistent implementation (the node's
/// store) makes the outbox survive restarts.
public protocol OutboundQueue: Sendable {
    /// Stores a new message with status ``MessageStatus/queued``. Returns once it is
    /// kept (durably, for a persistent queue). A message whose ID is known and final
    /// (e.g. failed) starts over; so does one that is ``MessageStatus/sent`` when the
    /// new message names a ``OutboundMessage/previousHop`` (this node's own message,
    /// come back round a loop and taken back into custody, docs/PROTOCOL.md §A.6 rule
    /// 3(b)): in one step, so a crash leaves either the old record or the new one.
    /// - Throws: when the queue cannot take it (full, failing storage), or
    ///   `.invalidArgument` when a message with this ID is still pending.
    func enqueue(_ message: OutboundMessage) async throws
    /// Stores a new message like ``enqueue(_:)`` whose payload is `stored` (already
    /// durable) instead of `message.payload` (which is empty). A queue that keeps
    /// payloads in the same place adopts it without copying; the default reads the
    /// bytes back and calls ``enqueue(_:)``. On success the queue owns `stored`.
    /// - Throws: as ``enqueue(_:)``, or when the payload cannot be read.
    func enqueue(_ message: OutboundMessage, stored: any StoredPayload) async throws
    /// Stores a new message like ``enqueue(_:)`` and claims it in the same step, for a
    /// message that can go out at once: nobody else can claim it in between, and the
    /// queue need not read back what the caller holds. The default enqueues, then
    /// claims.
    /// - Returns: the message as ``claim(_:)`` returns it; nil when it is queued but
    ///   was not claimed (it expired at once, or someone holds it).
    /// - Throws: as ``enqueue(_:)``.
    func enqueueClaimed(_ message: OutboundMessage) async throws -> OutboundMessage?
    /// Takes a queued message for sending: nobody else can claim it until it is
    /// updated back to ``MessageStatus/queued`` or to a final status.
    /// - Returns: nil when it is not queued or already claimed.
    func claim(_ id: MessageID) async -> OutboundMessage?
    /// The queued, unclaimed messages for `destination`: emergencies (flag
    /// `DataFrame.emergencyFlag`) first, then oldest first.
    func waiting(for destination: PeerID) async -> [MessageID]
    /// Records that a message moved on (and releases its claim). An update of a
    /// message already delivered, failed or expired is ignored: a final status is final.
    /// - Parameters:
    ///   - id: the message.
    ///   - status: where it is now.
    ///   - transport: the transport of the hop that took it, when sent or delivered.
    ///   - reason: why, when it failed or expired.
    func update(_ id: MessageID, to status: MessageStatus, transport: String?, reason: String?) async
    /// The record of a message, while the queue remembers it.
    func record(_ id: MessageID) async -> OutboundRecord?
    /// Replaces the bytes and flags of a message that is queued or claimed (the
    /// sender sealed it once to hand it to a relay), and its TTL when `ttl` is not nil
    /// (a relay's flood copy that took a hop's custody goes on with the TTL the
    /// ordinary copy brought, docs/PROTOCOL.md §A.9). Its digest, ID and status do not
    /// change.
    /// - Throws: `.unknownMessage` when it is no longer queued or claimed, or the
    ///   queue's storage error; the message then goes out as it was, or not at all.
    func replacePayload(_ id: MessageID, with payload: [UInt8], flags: UInt16, ttl: UInt8?) async throws
    /// Throws what ``enqueue(_:)`` would throw for lack of room (`.storeFull`) if a
    /// message of `bytes` bytes to `destination` were queued now: lets a caller refuse a
    /// large payload before reading it. A queue without bounds (the in-memory one) has
    /// room for anything; that is the default.
    func checkRoom(for destination: PeerID, bytes: Int) async throws
    /// Whether a message for `destination` is still this node's to send: queued
    /// (claimed or not) and unexpired. The router asks for a route to a destination
    /// only while this holds (docs/PROTOCOL.md §A.5, "Route requests", *Asking*). The
    /// default answers true (the router then asks as long as its schedule allows).
    func holdsUnsent(for destination: PeerID) async -> Bool
}

extension OutboundQueue {
    /// Replaces the bytes and flags of a message that is queued or claimed, keeping its
    /// TTL: ``replacePayload(_:with:flags:ttl:)`` with no new TTL.
    public func replacePayload(_ id: MessageID, with payload: [UInt8], flags: UInt16) async throws {
        try await replacePayload(id, with: payload, flags: flags, ttl: nil)
    }

    /// Enqueues `message`, then claims it.
    public func enqueueClaimed(_ message: OutboundMessage) async throws -> OutboundMessage? {
        try await enqueue(message)
        return await claim(message.id)
    }

    /// A queue without bounds: always room.
    public func checkRoom(for destination: PeerID, bytes: Int) async throws {}

    /// Without a way to tell: true.
    public func holdsUnsent(for destination: PeerID) async -> Bool { true }
}

/// The in-memory outbound queue: every unfinished message with its payload, and the
/// records of the last finished ones (payloads released). A message whose expiry
/// passes is marked ``MessageStatus/expired`` when it would next be claimed, listed or
/// looked for (``holdsUnsent(for:)``).
public final class InMemoryOutboundQueue: OutboundQueue {
    private struct State {
        var records: [MessageID: OutboundRecord] = [:]
        /// Unsent messages with their arrival number (for oldest-first order).
        var messages: [MessageID: (number: UInt64, message: OutboundMessage, expiresAt: ContinuousClock.Instant?)] = [:]
        var nextNumber: UInt64 = 0
        var claimed: Set<MessageID> = []
        var finished: Deque<MessageID> = []
    }

    /// Finished records remembered for ``record(_:)``.
    public let historyLimit: Int
    /// How long a message without its own expiry may wait; nil for no limit.
    public let defaultExpiry: Duration?
    private let clock: any MeshClock
    private let state = Mutex(State())

    /// Creates an empty queue.
    /// - Parameters:
    ///   - historyLimit: finished records remembered.
    ///   - defaultExpiry: how long a message without its own expiry may wait; nil
    ///     for no limit.
    ///   - clock: the clock expiries are read on.
    public init(historyLimit: Int = 4096, defaultExpiry: Duration? = nil, clock: any MeshClock = SystemClock()) {
        self.historyLimit = max(0, historyLimit)
        self.defaultExpiry = defaultExpiry
        self.clock = clock
    }

    public func enqueue(_ message: OutboundMessage) async throws {
        let now = clock.now
        try state.withLock { state in
            if let old = state.records[message.id], !old.status.isFinal,
                !(old.status == .sent && message.previousHop != nil)
            {
                throw MeshError(
                    .invalidArgument,
                    "message \(message.id.hex) is already in the outbox (status \(old.status)); use a new message ID"
                )
            }
            let attempts = state.records[message.id]?.attempts ?? 0
            if state.records[message.id]?.status.isFinal == true { state.finished.removeAll { $0 == message.id } }
            state.records[message.id] = OutboundRecord(
                id: message.id,
                destination: message.destination,
                bytes: message.payloadBytes ?? message.payload.count,
                status: .queued,
                flags: message.flags,
                contentDigest: message.contentDigest,
                attempts: attempts,
                origin: message.origin,
                previousHop: message.previousHop,
                ttl: message.previousHop == nil ? nil : message.ttl
            )
            state.nextNumber += 1
            let expiry = message.expiresAfter ?? defaultExpiry
            state.messages[message.id] = (state.nextNumber, message, expiry.map { now + $0 })
        }
    }

    public func claim(_ id: MessageID) async -> OutboundMessage? {
        let now = clock.now
        return state.withLock { state in
            guard let entry = state.messages[id], state.records[id]?.status == .queued,
                !state.claimed.contains(id)
            else { return nil }
            if let expiresAt = entry.expiresAt, expiresAt <= now {
                Self.expire(&state, id, limit: historyLimit)
                return nil
            }
            state.claimed.insert(id)
            state.records[id]?.attempts += 1
            return entry.message
        }
    }

    public func waiting(for destination: PeerID) async -> [MessageID] {
        let now = clock.now
        return state.withLock { state in
            let candidates = state.messages
                .filter {
                    $0.value.message.destination == destination && !state.claimed.contains($0.key)
                        && state.records[$0.key]?.status == .queued
                }
                .sorted {
                    let (left, right) = ($0.value.message.isEmergency, $1.value.message.isEmergency)
                    return left != right ? left : $0.value.number < $1.value.number
                }
            var ids: [MessageID] = []
            for (id, entry) in candidates {
                if let expiresAt = entry.expiresAt, expiresAt <= now {
                    Self.expire(&state, id, limit: historyLimit)
                } else {
                    ids.append(id)
                }
            }
            return ids
        }
    }

    public func holdsUnsent(for destination: PeerID) async -> Bool {
        let now = clock.now
        return state.withLock { state in
            var holds = false
            for (id, entry) in state.messages
            where entry.message.destination == destination && state.records[id]?.status == .queued {
                if let expiresAt = entry.expiresAt, expiresAt <= now, !state.claimed.contains(id) {
                    Self.expire(&state, id, limit: historyLimit)
                } else {
                    holds = true
                }
            }
            return holds
        }
    }

    public func update(_ id: MessageID, to status: MessageStatus, transport: String?, reason: String?) async {
        state.withLock { state in
            guard var record = state.records[id], !record.status.isFinal else { return }
            record.status = status
            if let transport { record.transport = transport }
            if let reason { record.reason = reason }
            state.records[id] = record
            state.claimed.remove(id)
            guard status.isFinal || status == .sent else { return }
            // Sent or final: the payload is no longer this node's to send.
            state.messages[id] = nil
            guard status.isFinal else { return }
            Self.remember(&state, id, limit: historyLimit)
        }
    }

    /// Ends a message whose expiry passed before it was delivered.
    private static func expire(_ state: inout State, _ id: MessageID, limit: Int) {
        finish(&state, id, status: .expired, reason: "its expiry passed before it could be delivered", limit: limit)
    }

    private static func finish(_ state: inout State, _ id: MessageID, status: MessageStatus, reason: String, limit: Int)
    {
        state.records[id]?.status = status
        state.records[id]?.reason = reason
        state.messages[id] = nil
        state.claimed.remove(id)
        remember(&state, id, limit: limit)
    }

    private static func remember(_ state: inout State, _ id: MessageID, limit: Int) {
        state.finished.append(id)
        while state.finished.count > limit, let oldest = state.finished.popFirst() {
            state.records[oldest] = nil
        }
    }

    public func record(_ id: MessageID) async -> OutboundRecord? {
        state.withLock { $0.records[id] }
    }

    public func replacePayload(_ id: MessageID, with payload: [UInt8], flags: UInt16, ttl: UInt8?) async throws {
        try state.withLock { state in
            guard state.messages[id] != nil, state.records[id]?.status == .queued else {
                throw MeshError(
                    .unknownMessage,
                    "message \(id.hex) is not waiting in the outbox any more; its payload was not replaced"
                )
            }
            state.messages[id]?.message.payload = payload
            state.messages[id]?.message.flags = flags
            // The record keeps the payload's size: sealing changes only the wire bytes.
            state.records[id]?.flags = flags
            if let ttl {
                state.messages[id]?.message.ttl = ttl
                if state.records[id]?.previousHop != nil { state.records[id]?.ttl = ttl }
            }
        }
    }

    /// Releases every claim, as a persistent queue does when it is opened again: a
    /// message that was being sent when its router stopped is queued again for the
    /// next router given this queue (simulations hand one queue object to a restarted
    /// router). Call it only while no router uses the queue.
    /// - Returns: the IDs queued again.
    @discardableResult
    public func requeueClaimed() -> [MessageID] {
        state.withLock { state in
            let ids = Array(state.claimed)
            state.claimed.removeAll()
            return ids
        }
    }

    /// Messages not yet sent, delivered, failed or expired.
    public var pendingCount: Int {
        state.withLock { $0.messages.count }
    }
}
